package source

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

func boundPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: testNode, Containers: []v1.Container{{Name: "main", Image: "busybox"}}},
	}
}

// startAPISource runs an APIWatcher on client until the test ends.
func startAPISource(t *testing.T, client *fake.Clientset) (*APIWatcher, chan []*v1.Pod) {
	t.Helper()
	out := make(chan []*v1.Pod)
	s := NewAPISource(kubeclienttest.FromClientset(client), testNode, out)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, out
}

// waitStore waits until the informer's store holds exactly the named pods.
func waitStore(t *testing.T, s *APIWatcher, want ...string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !slices.Equal(storeNames(s), want) {
		if time.Now().After(deadline) {
			t.Fatalf("store holds %v, want %v", storeNames(s), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storeNames lists the informer's pods, sorted (snapshot is Run's alone: it keeps its copies).
func storeNames(s *APIWatcher) []string {
	var out []string
	for _, item := range s.informer.GetStore().List() {
		out = append(out, item.(*v1.Pod).Name)
	}
	slices.Sort(out)
	return out
}

// expectQuiet checks that no snapshot follows within a short while.
func expectQuiet(t *testing.T, out <-chan []*v1.Pod) {
	t.Helper()
	select {
	case pods := <-out:
		t.Fatalf("unexpected snapshot %v", names(pods))
	case <-time.After(200 * time.Millisecond):
	}
}

func TestAPISourceInitialSnapshotAfterSync(t *testing.T) {
	client := fake.NewClientset(boundPod("b"), boundPod("a"))
	mirror := boundPod("static-node1")
	mirror.Annotations = map[string]string{podutil.AnnotationMirror: "hash"}
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), mirror, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	listing, release := make(chan string, 1), make(chan struct{})
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		listing <- a.(k8stesting.ListAction).GetListRestrictions().Fields.String()
		<-release
		return false, nil, nil
	})
	s, out := startAPISource(t, client)

	if sel := <-listing; sel != "spec.nodeName="+testNode {
		t.Errorf("list field selector = %q", sel)
	}
	// The list is still pending: nothing may be sent, not even an empty snapshot.
	expectQuiet(t, out)
	close(release)

	pods := receive(t, out)
	if got := []string{pods[0].Name, pods[1].Name, pods[2].Name}; !slices.Equal(got, []string{"a", "b", "static-node1"}) {
		t.Errorf("snapshot = %v, want sorted pods including the mirror", got)
	}
	// A sent pod is a copy: changing it must not reach the informer's store.
	pods[0].Labels = map[string]string{"changed": "yes"}
	if stored, _, _ := s.informer.GetStore().GetByKey("default/a"); stored.(*v1.Pod).Labels != nil {
		t.Error("a sent pod shares memory with the informer's store")
	}
	expectQuiet(t, out)
}

func TestAPISourceEmptyInitialSnapshot(t *testing.T) {
	_, out := startAPISource(t, fake.NewClientset())
	if pods := receive(t, out); len(pods) != 0 {
		t.Errorf("snapshot = %v, want empty", names(pods))
	}
}

func TestAPISourceCoalescesBursts(t *testing.T) {
	client := fake.NewClientset(boundPod("a"))
	s, out := startAPISource(t, client)
	receiveNames(t, out, "a")
	pods := client.CoreV1().Pods("default")
	ctx := context.Background()

	// A burst of changes while nobody reads: the first wakes the sender, which then waits on
	// the channel; the rest must collapse into one further snapshot.
	for _, name := range []string{"b", "c", "d"} {
		if _, err := pods.Create(ctx, boundPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	updated := boundPod("b")
	updated.Labels = map[string]string{"v": "2"}
	if _, err := pods.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStore(t, s, "a", "b", "d")

	var got [][]*v1.Pod
	for {
		snap := receive(t, out)
		got = append(got, snap)
		if slices.Equal(names(snap), []string{"a", "b", "d"}) && snap[1].Labels["v"] == "2" {
			break
		}
	}
	if len(got) > 2 {
		t.Errorf("5 changes in a burst gave %d snapshots, want at most 2", len(got))
	}
	expectQuiet(t, out)
}

// watchReopenTimeout bounds the wait for the informer to watch again; it backs off (with
// jitter) up to several seconds after failures.
const watchReopenTimeout = 30 * time.Second

// controlledWatches makes the informer's watches ones the test drives.
type controlledWatches struct {
	mu       sync.Mutex
	watchers []*watch.FakeWatcher
	opened   chan struct{}
}

func (c *controlledWatches) install(client *fake.Clientset) {
	c.opened = make(chan struct{}, 10)
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(10, false)
		c.mu.Lock()
		c.watchers = append(c.watchers, w)
		c.mu.Unlock()
		c.opened <- struct{}{}
		return true, w, nil
	})
}

func (c *controlledWatches) waitOpened(t *testing.T) *watch.FakeWatcher {
	t.Helper()
	select {
	case <-c.opened:
	case <-time.After(watchReopenTimeout):
		t.Fatal("timed out waiting for the informer to watch")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watchers[len(c.watchers)-1]
}

func TestAPISourceKeepsPodsAcrossLostWatch(t *testing.T) {
	client := fake.NewClientset(boundPod("a"), boundPod("b"))
	var watches controlledWatches
	watches.install(client)
	s, out := startAPISource(t, client)
	w := watches.waitOpened(t)
	receiveNames(t, out, "a", "b")

	// The connection drops: the informer watches again, the store keeps both pods and no
	// snapshot (certainly no empty one) goes out.
	w.Stop()
	w = watches.waitOpened(t)
	expectQuiet(t, out)
	waitStore(t, s, "a", "b")

	// The server says the watch is too old and the re-list fails for a while: still nothing
	// changes until a complete list arrives.
	var failLists sync.WaitGroup
	failLists.Add(1)
	failing := true
	var mu sync.Mutex
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			failing = false
			failLists.Done()
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	failLists.Wait()
	expectQuiet(t, out)
	waitStore(t, s, "a", "b")

	// Once watching again, changes flow as before.
	w = watches.waitOpened(t)
	w.Add(boundPod("c"))
	receiveNames(t, out, "a", "b", "c")
}

// A snapshot copies only the pods whose resourceVersion changed; the others are the previous
// snapshot's copies. A repeat of the versions is not sent.
func TestAPISnapshotCopiesOnlyChangedPods(t *testing.T) {
	out := make(chan []*v1.Pod, 2)
	client := fake.NewClientset()
	s := NewAPISource(kubeclienttest.FromClientset(client), testNode, out)
	store := s.informer.GetStore()
	a, b := boundPod("a"), boundPod("b")
	a.ResourceVersion, b.ResourceVersion = "1", "1"
	for _, p := range []*v1.Pod{a, b} {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	first := s.snapshot()
	b2 := b.DeepCopy()
	b2.ResourceVersion, b2.Labels = "2", map[string]string{"v": "2"}
	if err := store.Update(b2); err != nil {
		t.Fatal(err)
	}
	second := s.snapshot()
	if second[0] != first[0] {
		t.Error("the unchanged pod was copied again")
	}
	if second[1] == first[1] || second[1].Labels["v"] != "2" || second[1] == b2 {
		t.Errorf("the changed pod is not a fresh copy of the new version: %v", second[1].Labels)
	}

	ctx := context.Background()
	if !s.out.send(ctx, second) {
		t.Fatal("first snapshot not sent")
	}
	if s.out.send(ctx, s.snapshot()) {
		t.Error("a snapshot with the same versions was sent again")
	}
	b3 := b2.DeepCopy()
	b3.ResourceVersion = "3"
	_ = store.Update(b3)
	if !s.out.send(ctx, s.snapshot()) {
		t.Error("a snapshot with a new version was not sent")
	}
}
