package syncloop

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/pleg"
	"github.com/nodelet/nodelet/internal/testutil"
)

type fakeWorkers struct {
	updates  []podworkers.UpdateOptions
	states   map[types.UID]podworkers.State
	finished map[types.UID]time.Time
}

func (f *fakeWorkers) UpdatePod(u podworkers.UpdateOptions) {
	f.updates = append(f.updates, u)
	if u.Pod != nil && u.Type == podworkers.Create {
		f.states[u.Pod.UID] = podworkers.Syncing
	}
}

func (f *fakeWorkers) State(uid types.UID) (podworkers.State, bool) {
	s, ok := f.states[uid]
	return s, ok
}

func (f *fakeWorkers) Known() map[types.UID]podworkers.State { return f.states }

func (f *fakeWorkers) FinishedAt(uid types.UID) (time.Time, bool) {
	t, ok := f.finished[uid]
	return t, ok
}

type rejectAll struct{ rejected []string }

func (r *rejectAll) Admit(p *v1.Pod, active []*v1.Pod) (bool, string, string) {
	return len(active) < 1, "OutOfpods", "full"
}
func (r *rejectAll) Reject(p *v1.Pod, reason, msg string) { r.rejected = append(r.rejected, p.Name) }

func newLoop(running []*container.RunningPod, listedAt time.Time) (*Loop, *fakeWorkers, *bool) {
	w := &fakeWorkers{states: map[types.UID]podworkers.State{}, finished: map[types.UID]time.Time{}}
	ready := false
	l := New(Config{
		NodeName: "n1",
		Updates:  make(chan source.PodUpdate), Events: make(chan pleg.Event),
		RunningPods:  func() ([]*container.RunningPod, time.Time) { return running, listedAt },
		SourcesReady: func() bool { return ready },
		Pods:         pod.NewManager(), Workers: w, Queue: NewQueue(),
	})
	return l, w, &ready
}

func mkPod(name string, created time.Time) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), CreationTimestamp: metav1.NewTime(created)}}
}

func TestHousekeepingRemovesOnlyUnwantedPods(t *testing.T) {
	listed := time.Now()
	running := []*container.RunningPod{
		{UID: "wanted", Node: "n1"}, {UID: "orphan", Node: "n1"}, {UID: "just-removed", Node: "n1"},
		{UID: "other-nodes", Node: "n2"},
	}
	l, w, _ := newLoop(running, listed)
	l.handleUpdate(source.PodUpdate{Op: source.ADD, Pods: []*v1.Pod{mkPod("wanted", listed)}})
	w.finished["just-removed"] = listed.Add(time.Second)
	w.updates = nil
	l.housekeep()
	if len(w.updates) != 1 || w.updates[0].Running.UID != "orphan" || !w.updates[0].Kill.Remove {
		t.Fatalf("housekeeping updates %+v, want one remove of the orphan", w.updates)
	}
	if g := w.updates[0].Kill.GracePeriod; g == nil || *g != 1 {
		t.Errorf("orphan's grace period %v, want 1s as upstream", g)
	}
}

func TestHousekeepingWaitsForSources(t *testing.T) {
	l, w, ready := newLoop([]*container.RunningPod{{UID: "orphan", Node: "n1"}}, time.Now())
	l.cfg.HousekeepEvery = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	l.Run(ctx)
	cancel()
	if len(w.updates) != 0 {
		t.Fatalf("housekeeping ran before sources were ready: %+v", w.updates)
	}
	*ready = true
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	l.Run(ctx)
	if len(w.updates) == 0 {
		t.Fatal("housekeeping did not run once sources were ready")
	}
}

func TestAdmissionOldestFirst(t *testing.T) {
	l, w, _ := newLoop(nil, time.Now())
	adm := &rejectAll{}
	l.cfg.Admit = adm
	now := time.Now()
	l.handleUpdate(source.PodUpdate{Op: source.ADD, Pods: []*v1.Pod{mkPod("young", now), mkPod("old", now.Add(-time.Hour))}})
	if len(w.updates) != 1 || w.updates[0].Pod.Name != "old" || len(adm.rejected) != 1 || adm.rejected[0] != "young" {
		t.Fatalf("admitted %+v rejected %v; want old admitted, young rejected", w.updates, adm.rejected)
	}
}

func TestHealthyFailsWhenLoopStalls(t *testing.T) {
	l, _, _ := newLoop(nil, time.Now())
	l.cfg.StallAfter = 20 * time.Millisecond
	if err := l.Healthy(); err != nil {
		t.Fatalf("fresh loop unhealthy: %v", err)
	}
	time.Sleep(40 * time.Millisecond) // nothing turns the loop
	if err := l.Healthy(); err == nil {
		t.Fatal("stalled loop reported healthy")
	}
}

func TestQueueDue(t *testing.T) {
	q := NewQueue()
	now := time.Now()
	q.now = func() time.Time { return now }
	q.Enqueue("a", time.Second)
	q.Enqueue("b", time.Minute)
	q.Enqueue("b", 2*time.Second) // an earlier request wins
	now = now.Add(1500 * time.Millisecond)
	if due := q.Due(); len(due) != 1 || due[0] != "a" {
		t.Fatalf("due %v, want [a]", due)
	}
	now = now.Add(time.Second)
	if due := q.Due(); len(due) != 1 || due[0] != "b" {
		t.Fatalf("due %v, want [b]", due)
	}
}

func TestStatusChangeResyncsOnlyPodsWithReadinessGates(t *testing.T) {
	l, w, _ := newLoop(nil, time.Now())
	plain := mkPod("plain", time.Now())
	gated := mkPod("gated", time.Now())
	gated.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	w.states[plain.UID], w.states[gated.UID] = podworkers.Syncing, podworkers.Syncing
	l.handleUpdate(source.PodUpdate{Op: source.RECONCILE, Pods: []*v1.Pod{plain, gated}})
	if len(w.updates) != 1 || w.updates[0].Pod.Name != "gated" || w.updates[0].Type != podworkers.Sync {
		t.Fatalf("worker updates = %+v, want one Sync of the gated pod", w.updates)
	}
}

func TestOrphanedMirrorStaysWhileItsStaticPodTerminates(t *testing.T) {
	l, w, _ := newLoop(nil, time.Now())
	var deleted []string
	l.cfg.DeleteMirror = func(m *v1.Pod) { deleted = append(deleted, m.Name) }
	mirror := func(name, staticUID string) *v1.Pod {
		m := mkPod(name, time.Now())
		m.UID = types.UID("mirror-" + name)
		m.Annotations = map[string]string{podutil.AnnotationMirror: staticUID}
		return m
	}
	l.cfg.Pods.SetMirror(mirror("stopping", "static-1"))
	l.cfg.Pods.SetMirror(mirror("gone", "static-2"))
	w.states["static-1"] = podworkers.Terminating // its manifest was removed; grace period running
	l.removeOrphanedMirrors()
	if len(deleted) != 1 || deleted[0] != "gone" {
		t.Fatalf("deleted mirrors %v, want only the one whose static pod is gone", deleted)
	}
}

func TestContainerDeathsReachContainerGC(t *testing.T) {
	l, _, _ := newLoop(nil, time.Now())
	var died []string
	l.cfg.ContainerDied = func(uid types.UID, id string) { died = append(died, string(uid)+"/"+id) }
	for _, ev := range []pleg.Event{
		{UID: "a", Type: pleg.ContainerStarted, ID: "c1"}, {UID: "a", Type: pleg.ContainerDied, ID: "c1"},
		{UID: "a", Type: pleg.ContainerRemoved, ID: "c0"}, {UID: "b", Type: pleg.ContainerDied, ID: "c2"},
	} {
		l.handleEvent(ev)
	}
	if fmt.Sprint(died) != "[a/c1 b/c2]" {
		t.Errorf("container GC heard of %v, want the two deaths [a/c1 b/c2]", died)
	}
}

func TestHandledFollowsTheUpdatesTaken(t *testing.T) {
	l, _, _ := newLoop(nil, time.Now())
	updates := make(chan source.PodUpdate)
	l.cfg.Updates = updates
	testutil.Start(t, l.Run)
	if l.Handled() != 0 {
		t.Fatalf("handled %d before any update", l.Handled())
	}
	updates <- source.PodUpdate{Op: source.ADD, Pods: []*v1.Pod{mkPod("a", time.Now())}, Seq: 7}
	testutil.Eventually(t, "update 7 handled", func() bool { return l.Handled() == 7 })
	if _, ok := l.cfg.Pods.Get("a"); !ok {
		t.Error("handled before its pod reached the pod manager")
	}
}
