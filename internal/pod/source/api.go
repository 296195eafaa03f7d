package source

import (
	"context"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// APIWatcher watches the pods the API server binds to this node and sends the full set as a
// snapshot whenever it changes. Mirror pods are included; the sync loop tells them apart. (The
// type is not called APISource: that is the source name, podutil.APISource.)
type APIWatcher struct {
	informer cache.SharedIndexInformer
	out      snapshots
	changed  chan struct{} // one pending "store changed" signal; more coalesce into it
	// copies are the last snapshot's pods by UID: a pod whose resourceVersion is unchanged is
	// sent as the same copy again, so a change to one pod does not copy every pod of the node.
	copies map[types.UID]*v1.Pod
}

// NewAPISource returns a source for the pods with spec.nodeName = nodeName. Run it with Run.
func NewAPISource(client kubeclient.Interface, nodeName string, out chan<- []*v1.Pod) *APIWatcher {
	selector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
		},
	}
	// Resync 0: periodic resyncs would only replay the store; a snapshot is sent on real changes.
	informer := cache.NewSharedIndexInformer(lw, &v1.Pod{}, 0, cache.Indexers{})
	// Managed fields are never read and are a large part of each pod object.
	_ = informer.SetTransform(stripManagedFields)
	s := &APIWatcher{informer: informer, out: snapshots{out: out, byVersion: true}, changed: make(chan struct{}, 1)}
	notify := func() { s.notify() }
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	})
	return s
}

// notify records that the store changed; it never blocks the informer.
func (s *APIWatcher) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Run runs the informer and sends snapshots until ctx is done. The first snapshot goes out once
// the initial list is in the store, so an unfinished list never looks like "no pods". After
// that, every change is sent as soon as the previous send was taken; changes arriving during a
// send collapse into one snapshot, and a snapshot equal to the last one is not sent. A lost
// watch connection changes nothing: the informer keeps its store and re-lists or resumes in the
// background, replacing the store only with a complete list.
func (s *APIWatcher) Run(ctx context.Context) error {
	var informer sync.WaitGroup
	informer.Go(func() { s.informer.RunWithContext(ctx) })
	defer informer.Wait() // the informer stops with ctx
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return nil
	}
	klog.V(2).InfoS("API pod source synced", "pods", len(s.informer.GetStore().ListKeys()))
	for {
		// Drop the signal the initial list raised (or one a send left behind): the snapshot
		// taken right after this covers it.
		select {
		case <-s.changed:
		default:
		}
		if s.out.send(ctx, s.snapshot()) {
			klog.V(4).InfoS("Sent API pod snapshot")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.changed:
		}
	}
}

// snapshot returns copies of the stored pods, ordered by namespace and name. The receiver
// must not change them: an unchanged pod's copy is handed out again.
func (s *APIWatcher) snapshot() []*v1.Pod {
	items := s.informer.GetStore().List()
	pods := make([]*v1.Pod, 0, len(items))
	copies := make(map[types.UID]*v1.Pod, len(items))
	for _, item := range items {
		pod, ok := item.(*v1.Pod)
		if !ok {
			continue
		}
		c := s.copies[pod.UID]
		if c == nil || !sameVersion(c, pod) {
			c = pod.DeepCopy()
		}
		copies[pod.UID] = c
		pods = append(pods, c)
	}
	s.copies = copies
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	return pods
}

// stripManagedFields drops what the informer would otherwise keep for every pod but nodelet
// never reads.
func stripManagedFields(obj any) (any, error) {
	if pod, ok := obj.(*v1.Pod); ok {
		pod.ManagedFields = nil
	}
	return obj, nil
}
