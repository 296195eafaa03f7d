package podworkers

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/testutil"
)

// panicky syncs like fakeSyncer but panics in every SyncPod of pod bad and in the first
// killPanics SyncTerminatingPods of pod badKill.
type panicky struct {
	*fakeSyncer
	bad, badKill types.UID
	mu           sync.Mutex
	killPanics   int
	synced       map[types.UID]int
}

func (p *panicky) SyncPod(ctx context.Context, pod *v1.Pod) (Outcome, error) {
	if pod.UID == p.bad {
		p.record("panic")
		var m map[string]int
		m["boom"]++ // a nil-map write, as a real bug would
	}
	p.mu.Lock()
	p.synced[pod.UID]++
	p.mu.Unlock()
	return p.fakeSyncer.SyncPod(ctx, pod)
}

func (p *panicky) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, r *container.RunningPod, grace *int64) error {
	p.mu.Lock()
	boom := pod != nil && pod.UID == p.badKill && p.killPanics > 0
	if boom {
		p.killPanics--
	}
	p.mu.Unlock()
	if boom {
		p.record("kill-panic")
		panic("kill exploded")
	}
	return p.fakeSyncer.SyncTerminatingPod(ctx, pod, r, grace)
}

func podWithUID(uid types.UID) *v1.Pod {
	p := testPod(1)
	p.UID, p.Name = uid, string(uid)
	return p
}

// startPanicky starts workers over a syncer that panics for pod "bad", with a back-off on a
// clock that stands still: 10ms, 20ms, 40ms...
func startPanicky(t *testing.T, killPanics int) (*PodWorkers, *fakeQueue, *panicky, *record.FakeRecorder) {
	s := &panicky{fakeSyncer: newFakeSyncer(), bad: "bad", badKill: "victim", killPanics: killPanics, synced: map[types.UID]int{}}
	q := &fakeQueue{due: map[types.UID]time.Duration{}}
	rec := record.NewFakeRecorder(100)
	w := New(nil, s, q, time.Minute, rec)
	testutil.Start(t, w.Run)
	w.backoff = flowcontrol.NewFakeBackOff(10*time.Millisecond, time.Second, testingclock.NewFakeClock(time.Now()))
	return w, q, s, rec
}

// waitDue waits until the queue holds want for uid.
func waitDue(t *testing.T, q *fakeQueue, uid types.UID, want time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		q.mu.Lock()
		got := q.due[uid]
		q.mu.Unlock()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s requeued after %v, want %v", uid, got, want)
		}
	}
}

func TestPanicInOnePodsSyncIsContainedAndBackedOff(t *testing.T) {
	w, q, s, rec := startPanicky(t, 0)
	w.UpdatePod(UpdateOptions{Type: Create, Pod: podWithUID("bad")})
	w.UpdatePod(UpdateOptions{Type: Create, Pod: podWithUID("good")})
	waitDue(t, q, "bad", 10*time.Millisecond)
	// The other pod syncs, and goes on syncing, as if nothing happened.
	w.UpdatePod(UpdateOptions{Type: Sync, Pod: podWithUID("good")})
	for _, want := range []time.Duration{20 * time.Millisecond, 40 * time.Millisecond} {
		w.UpdatePod(UpdateOptions{Type: Sync, Pod: podWithUID("bad")})
		waitDue(t, q, "bad", want)
	}
	for deadline := time.Now().Add(5 * time.Second); s.syncs("good") < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the healthy pod synced %d times, want 2", s.syncs("good"))
		}
	}
	if st, ok := w.State("bad"); !ok || st != Syncing {
		t.Fatalf("panicking pod state %v known=%v, want a live syncing worker", st, ok)
	}
	ev := <-rec.Events
	if !strings.Contains(ev, "Warning FailedSync panic while syncing pod: assignment to entry in nil map") {
		t.Errorf("event %q, want a FailedSync warning naming the panic", ev)
	}
	// The kill of the panicking pod still completes, and its back-off goes with it.
	w.UpdatePod(UpdateOptions{Type: Kill, Pod: podWithUID("bad"), Kill: &KillOptions{Remove: true}})
	waitFor(t, s.fakeSyncer, "remove")
	waitGone(t, w, "bad")
	if d := w.backoff.Get("bad"); d != 0 {
		t.Errorf("removed pod's panic back-off still held: %v", d)
	}
}

func TestPanicInKillIsRetriedUntilTheKillCompletes(t *testing.T) {
	w, _, s, rec := startPanicky(t, 2)
	// The victim's syncs are fine; only its kill panics (twice).
	w.UpdatePod(UpdateOptions{Type: Create, Pod: podWithUID("victim")})
	waitFor(t, s.fakeSyncer, "sync")
	w.UpdatePod(UpdateOptions{Type: Kill, Pod: podWithUID("victim"), Kill: &KillOptions{Remove: true}})
	waitFor(t, s.fakeSyncer, "kill-panic")
	waitFor(t, s.fakeSyncer, "kill-panic")
	waitFor(t, s.fakeSyncer, "kill")
	waitFor(t, s.fakeSyncer, "remove")
	waitGone(t, w, "victim")
	if n := len(rec.Events); n != 2 {
		t.Errorf("%d events, want one per panic (2)", n)
	}
}

func (p *panicky) syncs(uid types.UID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.synced[uid]
}

func waitGone(t *testing.T, w *PodWorkers, uid types.UID) {
	t.Helper()
	testutil.Eventually(t, "worker of "+string(uid)+" forgotten after removal", func() bool {
		_, ok := w.State(uid)
		return !ok
	})
}
