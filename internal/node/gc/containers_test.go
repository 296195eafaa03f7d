package gc

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

var base = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	running = container.StateRunning
	exited  = container.StateExited
	created = container.StateCreated
)

// crashLooping is a live pod whose "app" container died four times and runs again, with a
// "side" container that died twice.
func crashLooping() *container.RunningPod {
	return newRunningPod("live", testNode, base).sandbox("sb", true, 60).
		container("app-1", "app", "sb", exited, 50).container("app-2", "app", "sb", exited, 40).
		container("app-3", "app", "sb", exited, 30).container("app-4", "app", "sb", exited, 20).
		container("app-5", "app", "sb", running, 10).
		container("side-1", "side", "sb", exited, 45).container("side-2", "side", "sb", exited, 35).pod
}

func TestKeepsNewestDeadInstancePerContainer(t *testing.T) {
	rt := &fakeRuntime{pods: []*container.RunningPod{crashLooping()}}
	g, _ := testGC(t, rt, DefaultPolicy, "live")
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt, "app-1", "app-2", "app-3", "side-1")

	// A second pass finds nothing more to do.
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt, "app-1", "app-2", "app-3", "side-1")
}

func TestMaxPerPodContainer(t *testing.T) {
	for _, tt := range []struct {
		max  int
		want []string
	}{
		{2, []string{"app-1", "app-2"}},
		{-1, nil}, // no limit
		{0, []string{"app-1", "app-2", "app-3", "side-1"}}, // the newest dead instance still stays
	} {
		rt := &fakeRuntime{pods: []*container.RunningPod{crashLooping()}}
		g, _ := testGC(t, rt, Policy{MaxPerPodContainer: tt.max, MaxContainers: -1}, "live")
		if err := g.GarbageCollect(context.Background()); err != nil {
			t.Fatal(err)
		}
		wantRemoved(t, rt, tt.want...)
	}
}

func TestMinAge(t *testing.T) {
	pod := newRunningPod("live", testNode, base).sandbox("sb", true, 300).
		container("old-1", "app", "sb", exited, 180).container("old-2", "app", "sb", exited, 120).
		container("young", "app", "sb", exited, 10).
		container("never-started", "init", "sb", created, 90).container("new-created", "init", "sb", created, 5).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{pod}}
	g, _ := testGC(t, rt, Policy{MinAge: time.Hour, MaxPerPodContainer: 1, MaxContainers: -1}, "live")
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Only instances older than an hour count: old-2 is the newest of those and stays.
	wantRemoved(t, rt, "old-1")
}

func TestMaxContainersEvensOutAcrossPods(t *testing.T) {
	a := newRunningPod("a", testNode, base).sandbox("sb-a", true, 100).
		container("a-1", "app", "sb-a", exited, 90).container("a-2", "app", "sb-a", exited, 80).
		container("a-3", "app", "sb-a", exited, 70).container("a-4", "app", "sb-a", exited, 60).pod
	b := newRunningPod("b", testNode, base).sandbox("sb-b", true, 100).
		container("b-1", "app", "sb-b", exited, 50).container("b-2", "app", "sb-b", exited, 40).
		container("b-3", "app", "sb-b", exited, 30).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{a, b}}
	g, _ := testGC(t, rt, Policy{MaxPerPodContainer: -1, MaxContainers: 4}, "a", "b")
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 4 containers over 2 units: each keeps its newest 2.
	wantRemoved(t, rt, "a-1", "a-2", "b-1")
}

func TestMaxContainersRemovesOldestFirstWhenEvenSplitIsNotEnough(t *testing.T) {
	a := newRunningPod("a", testNode, base).sandbox("sb-a", true, 100).
		container("a-1", "app", "sb-a", exited, 90).container("a-2", "app", "sb-a", exited, 80).
		container("a-3", "app", "sb-a", exited, 70).pod
	b := newRunningPod("b", testNode, base).sandbox("sb-b", true, 100).
		container("b-1", "app", "sb-b", exited, 50).container("b-2", "app", "sb-b", exited, 40).
		container("b-3", "app", "sb-b", exited, 30).pod
	// b-1 cannot be removed, so evening out leaves 5 instances for a limit of 4.
	rt := &fakeRuntime{pods: []*container.RunningPod{a, b}, failRm: map[string]bool{"b-1": true}}
	g, _ := testGC(t, rt, Policy{MaxPerPodContainer: -1, MaxContainers: 4}, "a", "b")
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Evening out removes a-1 (b-1 fails); then the oldest left beyond each unit's newest:
	// a-2 goes.
	wantRemoved(t, rt, "a-1", "a-2")
}

func TestMaxContainersKeepsNewestOfEachLivePodContainer(t *testing.T) {
	var pods []*container.RunningPod
	for _, uid := range []string{"a", "b", "c"} {
		pods = append(pods, newRunningPod(uid, testNode, base).sandbox("sb-"+uid, true, 100).
			container(uid+"-1", "app", "sb-"+uid, exited, 90).container(uid+"-2", "app", "sb-"+uid, exited, 80).pod)
	}
	rt := &fakeRuntime{pods: pods}
	g, _ := testGC(t, rt, Policy{MaxPerPodContainer: -1, MaxContainers: 1}, "a", "b", "c")
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt, "a-1", "b-1", "c-1")
}

func TestGonePodLosesEverything(t *testing.T) {
	gone := newRunningPod("gone", testNode, base).sandbox("sb-gone-1", false, 100).sandbox("sb-gone-2", false, 50).
		container("g-1", "app", "sb-gone-1", exited, 90).container("g-2", "app", "sb-gone-2", exited, 40).pod
	stillRunning := newRunningPod("orphan", testNode, base).sandbox("sb-orphan", true, 100).
		container("o-1", "app", "sb-orphan", running, 90).pod // housekeeping kills it first
	other := newRunningPod("elsewhere", "node-2", base).sandbox("sb-other", false, 100).
		container("x-1", "app", "sb-other", exited, 90).container("x-2", "app", "sb-other", exited, 80).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{gone, stillRunning, other}}
	g, _ := testGC(t, rt, DefaultPolicy)
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt, "g-1", "g-2", "sb-gone-1", "sb-gone-2")
}

func TestNothingOfGonePodsGoesBeforeSourcesAreReady(t *testing.T) {
	gone := newRunningPod("gone", testNode, base).sandbox("sb-1", false, 100).sandbox("sb-2", false, 60).
		container("g-1", "app", "sb-1", exited, 90).container("g-2", "app", "sb-2", exited, 50).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{gone}}
	g, _ := testGC(t, rt, DefaultPolicy)
	g.alwaysReady, g.opts.SourcesReady = false, func() bool { return false }
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Treated as a live pod: the policy still applies.
	wantRemoved(t, rt, "g-1", "sb-1")
}

func TestSandboxes(t *testing.T) {
	live := newRunningPod("live", testNode, base).
		sandbox("sb-1", false, 100).sandbox("sb-2", false, 80).sandbox("sb-3", true, 60).
		container("c-1", "app", "sb-2", exited, 70).container("c-2", "app", "sb-3", running, 50).pod
	stopped := newRunningPod("stopped", testNode, base).sandbox("st-1", false, 100).sandbox("st-2", false, 50).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{live, stopped}}
	g, _ := testGC(t, rt, DefaultPolicy, "live", "stopped")
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// sb-2 holds the newest dead app instance; the newest sandbox of a pod stays.
	wantRemoved(t, rt, "sb-1", "st-1")
}

func TestDeleteAllUnusedContainersEmptiesTerminatedPods(t *testing.T) {
	done := newRunningPod("done", testNode, base).sandbox("sb-done", false, 100).
		container("d-1", "app", "sb-done", exited, 90).container("d-2", "app", "sb-done", exited, 80).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{crashLooping(), done}}
	g, _ := testGC(t, rt, DefaultPolicy, "live", "done")
	g.opts.PodTerminated = func(uid types.UID) bool { return uid == "done" }

	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt, "app-1", "app-2", "app-3", "side-1", "d-1")
	if err := g.DeleteAllUnusedContainers(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt, "app-1", "app-2", "app-3", "side-1", "d-1", "d-2", "sb-done")
}

func TestNewRejectsNegativeMinAge(t *testing.T) {
	_, err := New(Options{Policy: Policy{MinAge: -time.Second}, Runtime: &fakeRuntime{}, PodExists: func(types.UID) bool { return true }})
	if err == nil {
		t.Fatal("negative MinAge accepted")
	}
}

func TestRunReportsFailedPass(t *testing.T) {
	rt := &fakeRuntime{listErr: errors.New("runtime down")}
	g, _ := testGC(t, rt, DefaultPolicy)
	rec := record.NewFakeRecorder(10)
	g.opts.Recorder = rec
	g.opts.NodeRef = nodeRef()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	ev := <-rec.Events
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
	if want := "Warning ContainerGCFailed list runtime pods: runtime down"; ev != want {
		t.Errorf("event %q, want %q", ev, want)
	}
}

func TestGonePodsWaitForTheSourcesToSettle(t *testing.T) {
	gone := newRunningPod("gone", testNode, base).sandbox("sb", false, 100).
		container("g-1", "app", "sb", exited, 90).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{gone}}
	g, clk := testGC(t, rt, DefaultPolicy)
	g.alwaysReady = false
	g.opts.SourcesReady = func() bool { return true }
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt) // the pods of the sources' first snapshots may not be in the pod manager yet
	clk.Step(sourcesSettle)
	if err := g.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt, "g-1", "sb")
}
