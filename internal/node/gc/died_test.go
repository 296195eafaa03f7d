package gc

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// The case seen on a node: a crash-looping container with the default policy had three dead
// instances well after its second restart, because only the periodic pass removed them. A
// death now trims its container at once, without waiting for the next pass.
func TestCrashLoopKeepsOneDeadInstanceBetweenPasses(t *testing.T) {
	rt := &fakeRuntime{pods: []*container.RunningPod{newRunningPod("live", testNode, base).sandbox("sb", true, 60).
		container("app-1", "app", "sb", exited, 3).container("app-2", "app", "sb", running, 2).pod}}
	g, _ := testGC(t, rt, DefaultPolicy, "live")
	g.opts.Period = time.Hour // no second periodic pass during the test
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// The second instance dies, a third starts and dies too, a fourth runs.
	rt.mu.Lock()
	rt.pods = []*container.RunningPod{newRunningPod("live", testNode, base).sandbox("sb", true, 60).
		container("app-1", "app", "sb", exited, 3).container("app-2", "app", "sb", exited, 2).
		container("app-3", "app", "sb", exited, 1).container("app-4", "app", "sb", running, 0).pod}
	rt.mu.Unlock()
	g.ContainerDied("live", "app-3")

	deadline := time.Now().Add(10 * time.Second)
	for len(rt.removed()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	wantRemoved(t, rt, "app-1", "app-2")
}

func TestTrimDeadInstances(t *testing.T) {
	for _, tt := range []struct {
		name   string
		policy Policy
		uid    string
		id     string
		want   []string
	}{
		{"only the dead container's instances", DefaultPolicy, "live", "app-4", []string{"app-1", "app-2", "app-3"}},
		{"the other container", DefaultPolicy, "live", "side-2", []string{"side-1"}},
		{"keeps MaxPerPodContainer", Policy{MaxPerPodContainer: 2, MaxContainers: -1}, "live", "app-4", []string{"app-1", "app-2"}},
		{"newest dead instance stays at 0", Policy{MaxPerPodContainer: 0, MaxContainers: -1}, "live", "app-4", []string{"app-1", "app-2", "app-3"}},
		{"no limit", Policy{MaxPerPodContainer: -1, MaxContainers: -1}, "live", "app-4", nil},
		{"younger than MinAge stay", Policy{MinAge: 35 * time.Minute, MaxPerPodContainer: 1, MaxContainers: -1}, "live", "app-4", []string{"app-1"}},
		{"container no longer listed", DefaultPolicy, "live", "gone", nil},
		{"another pod's UID", DefaultPolicy, "other", "app-4", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := &fakeRuntime{pods: []*container.RunningPod{crashLooping()}}
			g, _ := testGC(t, rt, tt.policy, "live")
			if err := g.TrimDeadInstances(context.Background(), types.UID(tt.uid), tt.id); err != nil {
				t.Fatal(err)
			}
			wantRemoved(t, rt, tt.want...)
		})
	}
}

func TestTrimDeadInstancesLeavesOtherNodesAlone(t *testing.T) {
	pod := newRunningPod("theirs", "node-2", base).sandbox("sb", true, 60).
		container("t-1", "app", "sb", exited, 30).container("t-2", "app", "sb", exited, 20).pod
	rt := &fakeRuntime{pods: []*container.RunningPod{pod}}
	g, _ := testGC(t, rt, DefaultPolicy, "theirs")
	if err := g.TrimDeadInstances(context.Background(), "theirs", "t-2"); err != nil {
		t.Fatal(err)
	}
	wantRemoved(t, rt)
}
