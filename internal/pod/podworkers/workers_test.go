package podworkers

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/testutil"
)

// fakeSyncer records calls; SyncPod blocks while gate is held so tests can pile up updates.
type fakeSyncer struct {
	mu        sync.Mutex
	calls     []string
	gate      chan struct{}
	terminal  bool
	killErrs  int // fail this many kills first
	grace     []int64
	syncedGen []int64
	done      chan string
	entered   chan struct{} // receives each time SyncPod starts
	killGate  chan struct{} // when set, kills wait for it
}

func newFakeSyncer() *fakeSyncer {
	return &fakeSyncer{done: make(chan string, 100), entered: make(chan struct{}, 100)}
}

func (f *fakeSyncer) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
	f.done <- s
}

func (f *fakeSyncer) SyncPod(ctx context.Context, pod *v1.Pod) (Outcome, error) {
	f.entered <- struct{}{}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			f.record("sync-cancelled")
			return Outcome{}, ctx.Err()
		}
	}
	f.mu.Lock()
	f.syncedGen = append(f.syncedGen, pod.Generation)
	terminal := f.terminal
	f.mu.Unlock()
	f.record("sync")
	return Outcome{Terminal: terminal}, nil
}

func (f *fakeSyncer) SyncTerminatingPod(_ context.Context, _ *v1.Pod, _ *container.RunningPod, grace *int64) error {
	if f.killGate != nil {
		<-f.killGate
	}
	f.mu.Lock()
	if f.killErrs > 0 {
		f.killErrs--
		f.mu.Unlock()
		f.record("kill-failed")
		return errors.New("runtime unavailable")
	}
	g := int64(-1)
	if grace != nil {
		g = *grace
	}
	f.grace = append(f.grace, g)
	f.mu.Unlock()
	f.record("kill")
	return nil
}

func (f *fakeSyncer) SyncTerminatedPod(_ context.Context, _ *v1.Pod, _ types.UID, remove bool) error {
	if remove {
		f.record("remove")
	} else {
		f.record("terminated")
	}
	return nil
}

type fakeQueue struct {
	mu  sync.Mutex
	due map[types.UID]time.Duration
}

func (q *fakeQueue) Enqueue(uid types.UID, after time.Duration) {
	q.mu.Lock()
	q.due[uid] = after
	q.mu.Unlock()
}

func testPod(gen int64) *v1.Pod {
	grace := int64(30)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1", Generation: gen},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace},
	}
}

func waitFor(t *testing.T, f *fakeSyncer, want string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case got := <-f.done:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %q; calls so far %v", want, f.calls)
		}
	}
}

func start(t *testing.T, f *fakeSyncer) (*PodWorkers, *fakeQueue) {
	return startOver(t, nil, f)
}

// startOver starts workers keeping their states in states (nil: their own).
func startOver(t *testing.T, states *States, f *fakeSyncer) (*PodWorkers, *fakeQueue) {
	q := &fakeQueue{due: map[types.UID]time.Duration{}}
	w := New(states, f, q, time.Minute, nil)
	testutil.Start(t, w.Run)
	return w, q
}

func TestUpdatesCoalesceToNewestSpec(t *testing.T) {
	f := newFakeSyncer()
	f.gate = make(chan struct{})
	w, q := start(t, f)
	w.UpdatePod(UpdateOptions{Type: Create, Pod: testPod(1)})
	<-f.entered
	// While the first sync is blocked, three more updates arrive; only the newest should run.
	for gen := int64(2); gen <= 4; gen++ {
		w.UpdatePod(UpdateOptions{Type: Update, Pod: testPod(gen)})
	}
	close(f.gate)
	waitFor(t, f, "sync")
	waitFor(t, f, "sync")
	time.Sleep(50 * time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.syncedGen) != 2 || f.syncedGen[1] != 4 {
		t.Fatalf("synced generations %v, want [1 4]", f.syncedGen)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if d := q.due["uid-1"]; d < time.Minute {
		t.Fatalf("healthy pod requeued after %v, want >= resync", d)
	}
}

func TestKillInterruptsSyncAndIsRetriedUntilDone(t *testing.T) {
	f := newFakeSyncer()
	f.gate = make(chan struct{}) // never opened: the sync hangs like a slow image pull
	f.killErrs = 1
	w, _ := start(t, f)
	w.UpdatePod(UpdateOptions{Type: Create, Pod: testPod(1)})
	<-f.entered
	grace := int64(5)
	w.UpdatePod(UpdateOptions{Type: Kill, Pod: testPod(1), Kill: &KillOptions{GracePeriod: &grace, Remove: true}})
	waitFor(t, f, "sync-cancelled")
	waitFor(t, f, "kill-failed")
	waitFor(t, f, "kill")
	waitFor(t, f, "remove")
	waitGone(t, w, "uid-1")
	if f.grace[0] != 5 {
		t.Fatalf("kill grace %d, want 5", f.grace[0])
	}
}

func TestTerminalPodIsStoppedButKept(t *testing.T) {
	f := newFakeSyncer()
	f.terminal = true
	w, _ := start(t, f)
	w.UpdatePod(UpdateOptions{Type: Create, Pod: testPod(1)})
	waitFor(t, f, "sync")
	waitFor(t, f, "kill")
	waitFor(t, f, "terminated")
	if st, ok := w.State("uid-1"); !ok || st != Terminated {
		t.Fatalf("state %v known=%v, want terminated", st, ok)
	}
	w.UpdatePod(UpdateOptions{Type: Kill, Pod: testPod(1), Kill: &KillOptions{Remove: true}})
	waitFor(t, f, "remove")
}

// States are made before the workers, as app makes them before the parts built before the
// workers that read them: a reader holding only the States sees each pod's worker.
func TestStatesMadeBeforeTheWorkers(t *testing.T) {
	states := NewStates()
	if _, ok := states.State("uid-1"); ok || len(states.Known()) != 0 || !states.CleanedUp("uid-1") {
		t.Fatal("a pod known before any worker")
	}
	f := newFakeSyncer()
	f.terminal = true
	w, _ := startOver(t, states, f)
	w.UpdatePod(UpdateOptions{Type: Create, Pod: testPod(1)})
	waitFor(t, f, "terminated")
	if st, ok := states.State("uid-1"); !ok || st != Terminated || states.Known()["uid-1"] != Terminated {
		t.Fatalf("state %v known=%v through the States, want terminated", st, ok)
	}
	w.UpdatePod(UpdateOptions{Type: Kill, Pod: testPod(1), Kill: &KillOptions{Remove: true}})
	waitFor(t, f, "remove")
	waitGone(t, w, "uid-1")
	if _, ok := states.State("uid-1"); ok {
		t.Error("a removed pod still known through the States")
	}
	if _, ok := states.FinishedAt("uid-1"); !ok {
		t.Error("no finish time for the removed pod")
	}
}

func TestRecreateAfterRemoveOfSameUID(t *testing.T) {
	f := newFakeSyncer()
	f.killGate = make(chan struct{})
	w, _ := start(t, f)
	w.UpdatePod(UpdateOptions{Type: Create, Pod: testPod(1)})
	waitFor(t, f, "sync")
	w.UpdatePod(UpdateOptions{Type: Kill, Pod: testPod(1), Kill: &KillOptions{Remove: true}})
	w.UpdatePod(UpdateOptions{Type: Create, Pod: testPod(2)}) // put back while being killed
	close(f.killGate)
	waitFor(t, f, "kill")
	// Re-added with the same UID: its dead containers stay (restart counts go on), so the
	// clean-up is the non-removing one, then the pod starts over.
	waitFor(t, f, "terminated")
	waitFor(t, f, "sync")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c == "remove" {
			t.Fatalf("calls %v: a re-added pod's runtime state was removed", f.calls)
		}
	}
	if last := f.syncedGen[len(f.syncedGen)-1]; last != 2 {
		t.Fatalf("re-added pod synced generation %d, want 2", last)
	}
}

func TestMergeKillKeepsStrongest(t *testing.T) {
	g10, g3 := int64(10), int64(3)
	k := mergeKill(&KillOptions{GracePeriod: &g10, Remove: true}, &KillOptions{GracePeriod: &g3})
	if !k.Remove || *k.GracePeriod != 3 {
		t.Fatalf("got remove=%v grace=%d", k.Remove, *k.GracePeriod)
	}
	k = mergeKill(&KillOptions{GracePeriod: &g3}, &KillOptions{GracePeriod: &g10})
	if *k.GracePeriod != 3 {
		t.Fatalf("longer grace replaced shorter: %d", *k.GracePeriod)
	}
}

func TestNewStaticPodVersionWaitsForTheOldOne(t *testing.T) {
	f := newFakeSyncer()
	f.killGate = make(chan struct{})
	w, _ := start(t, f)
	static := func(uid types.UID, gen int64) *v1.Pod {
		p := testPod(gen)
		p.UID = uid
		p.Annotations = map[string]string{podutil.AnnotationSource: podutil.FileSource}
		return p
	}
	w.UpdatePod(UpdateOptions{Type: Create, Pod: static("v1", 1)})
	waitFor(t, f, "sync")
	// The manifest changed: the old version is removed (slowly), the new one added.
	w.UpdatePod(UpdateOptions{Type: Kill, Pod: static("v1", 1), Kill: &KillOptions{Remove: true}})
	w.UpdatePod(UpdateOptions{Type: Create, Pod: static("v2", 2)})
	select {
	case got := <-f.done:
		t.Fatalf("%q while the old version was still being killed; want nothing", got)
	case <-time.After(200 * time.Millisecond):
	}
	close(f.killGate)
	waitFor(t, f, "remove")
	waitFor(t, f, "sync")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.syncedGen) != 2 || f.syncedGen[1] != 2 {
		t.Fatalf("synced generations %v, want [1 2]", f.syncedGen)
	}
}

// An evicted pod (killed, kept) counts as cleaned up only once its terminated-pod cleanup
// has run, not when its containers are stopped.
func TestCleanedUpAfterTheTerminatedPodsCleanup(t *testing.T) {
	f := newFakeSyncer()
	f.killGate = make(chan struct{})
	w, _ := start(t, f)
	w.UpdatePod(UpdateOptions{Type: Create, Pod: testPod(1)})
	waitFor(t, f, "sync")
	if w.CleanedUp("uid-1") {
		t.Fatal("a running pod reads as cleaned up")
	}
	w.UpdatePod(UpdateOptions{Type: Kill, Pod: testPod(1)})
	time.Sleep(20 * time.Millisecond) // the kill is held at its gate
	if w.CleanedUp("uid-1") {
		t.Fatal("a pod being killed reads as cleaned up")
	}
	close(f.killGate)
	waitFor(t, f, "kill")
	waitFor(t, f, "terminated")
	testutil.Eventually(t, "cleaned up after the terminated pod's cleanup ran", func() bool { return w.CleanedUp("uid-1") })
	if !w.CleanedUp("never-seen") {
		t.Error("a pod with no worker (removed) reads as not cleaned up")
	}
}
