package pod

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// mirrorDeleteTimeout bounds each attempt of the background deletion of an orphaned mirror pod.
const mirrorDeleteTimeout = 30 * time.Second

// MirrorClient creates and deletes mirror pods: the API server's read-only copies of static pods,
// which let the cluster see (and account for) what nodelet runs from files and URLs.
type MirrorClient struct {
	client   kubeclient.Interface
	nodeName string
}

// NewMirrorClient returns a client that makes mirror pods owned by node nodeName.
func NewMirrorClient(client kubeclient.Interface, nodeName string) *MirrorClient {
	return &MirrorClient{client: client, nodeName: nodeName}
}

// Create posts the mirror of static. A mirror that already exists is not an error: the caller
// compares hashes (MatchesStatic) and deletes stale mirrors itself.
func (c *MirrorClient) Create(ctx context.Context, static *v1.Pod) error {
	hash := static.Annotations[podutil.AnnotationHash]
	if hash == "" {
		return fmt.Errorf("static pod %s/%s has no %s annotation", static.Namespace, static.Name, podutil.AnnotationHash)
	}
	// The node's UID is read each time (mirror creation is rare) so a re-registered node is never
	// named with a stale UID, which NodeRestriction would reject.
	node, err := c.client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("looking up node %s for the mirror pod owner: %w", c.nodeName, err)
	}
	mirror := mirrorOf(static, node)
	_, err = c.client.CoreV1().Pods(mirror.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		klog.V(4).InfoS("Mirror pod already exists", "pod", klog.KObj(mirror))
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating mirror pod %s/%s: %w", mirror.Namespace, mirror.Name, err)
	}
	klog.V(2).InfoS("Created mirror pod", "pod", klog.KObj(mirror), "hash", hash)
	return nil
}

// mirrorOf builds the mirror pod object for static, owned by node. NodeRestriction admits a node's
// pod only with the mirror annotation, spec.nodeName = the node, and exactly one owner reference:
// the node itself as controller, without blockOwnerDeletion.
func mirrorOf(static *v1.Pod, node *v1.Node) *v1.Pod {
	annotations := make(map[string]string, len(static.Annotations)+1)
	for k, v := range static.Annotations {
		annotations[k] = v
	}
	annotations[podutil.AnnotationMirror] = static.Annotations[podutil.AnnotationHash]
	controller := true
	mirror := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      copyLabels(static.Labels),
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Node",
				Name:       node.Name,
				UID:        node.UID,
				Controller: &controller,
			}},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	if mirror.Spec.NodeName == "" {
		mirror.Spec.NodeName = node.Name
	}
	return mirror
}

func copyLabels(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// Delete removes a mirror pod at once (grace 0). With uid set, only that very object is deleted;
// a mirror that is already gone, or was replaced by another object, counts as deleted.
func (c *MirrorClient) Delete(ctx context.Context, namespace, name string, uid *types.UID) error {
	grace := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &grace}
	if uid != nil {
		opts.Preconditions = &metav1.Preconditions{UID: uid}
	}
	err := c.client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
	switch {
	case err == nil:
		klog.V(2).InfoS("Deleted mirror pod", "pod", klog.KRef(namespace, name))
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case uid != nil && apierrors.IsConflict(err):
		// The UID precondition failed: the mirror we meant is gone already.
		klog.V(2).InfoS("Mirror pod was replaced before deletion", "pod", klog.KRef(namespace, name), "uid", *uid)
		return nil
	default:
		return fmt.Errorf("deleting mirror pod %s/%s: %w", namespace, name, err)
	}
}

// DeleteOrphan removes an orphaned mirror pod (its static pod is gone), retrying a few times:
// the sync loop has already forgotten it, so nothing else would.
func (c *MirrorClient) DeleteOrphan(ctx context.Context, mirror *v1.Pod) {
	uid := mirror.UID
	deleted := func(ctx context.Context) (bool, error) {
		dctx, cancel := context.WithTimeout(ctx, mirrorDeleteTimeout)
		defer cancel()
		err := c.Delete(dctx, mirror.Namespace, mirror.Name, (*types.UID)(&uid))
		if err != nil {
			klog.ErrorS(err, "Deleting orphaned mirror pod failed; retrying", "pod", klog.KObj(mirror))
		}
		return err == nil, nil
	}
	// Five tries, 1s, 2s, 4s, 8s apart.
	_ = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Steps: 5}, deleted)
}

// MirrorHash returns the static pod hash a mirror pod was made from ("" if pod is no mirror).
func MirrorHash(pod *v1.Pod) string {
	return pod.Annotations[podutil.AnnotationMirror]
}

// MatchesStatic reports whether mirror is the current, live mirror of static: made from the same
// static pod version and not being deleted.
func MatchesStatic(mirror, static *v1.Pod) bool {
	if mirror == nil || static == nil || mirror.DeletionTimestamp != nil {
		return false
	}
	hash, ok := mirror.Annotations[podutil.AnnotationMirror]
	return ok && hash != "" && hash == static.Annotations[podutil.AnnotationHash]
}

// FullName is the key static and mirror pods share: "name_namespace".
func FullName(pod *v1.Pod) string {
	return pod.Name + "_" + pod.Namespace
}

// MirrorSet maps a static pod's full name to the mirror pod the API server holds for it.
// It is safe for concurrent use.
type MirrorSet struct {
	mu      sync.RWMutex
	mirrors map[string]*v1.Pod
}

// NewMirrorSet returns an empty set.
func NewMirrorSet() *MirrorSet {
	return &MirrorSet{mirrors: map[string]*v1.Pod{}}
}

// Set records mirror under its full name, replacing any earlier one.
func (s *MirrorSet) Set(mirror *v1.Pod) {
	s.mu.Lock()
	s.mirrors[FullName(mirror)] = mirror
	s.mu.Unlock()
}

// Delete forgets the mirror with this full name.
func (s *MirrorSet) Delete(fullName string) {
	s.mu.Lock()
	delete(s.mirrors, fullName)
	s.mu.Unlock()
}

// Get returns the mirror recorded under fullName.
func (s *MirrorSet) Get(fullName string) (*v1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.mirrors[fullName]
	return m, ok
}

// Lookup returns the live mirror of static, if one matches it. Its signature fits
// status.MirrorLookup.
func (s *MirrorSet) Lookup(static *v1.Pod) (*v1.Pod, bool) {
	m, ok := s.Get(FullName(static))
	if !ok || !MatchesStatic(m, static) {
		return nil, false
	}
	return m, true
}
