package app

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// A pod's volumes may go once its worker has terminated it; a pod without a worker only once
// every source has been seen, none wants it and the runtime runs nothing of it.
func TestContainersGone(t *testing.T) {
	workers := map[types.UID]podworkers.State{"syncing": podworkers.Syncing, "terminating": podworkers.Terminating, "terminated": podworkers.Terminated}
	ready := false
	listedAt := time.Time{}
	listed := []*container.RunningPod{
		{UID: "orphan-running", Containers: []*container.ContainerStatus{{State: container.StateRunning}}},
		{UID: "orphan-sandbox", Sandboxes: []*container.SandboxStatus{{Ready: true}}},
		{UID: "orphan-exited", Containers: []*container.ContainerStatus{{State: container.StateExited}}},
	}
	p := &podStates{
		worker:       func(uid types.UID) (podworkers.State, bool) { s, ok := workers[uid]; return s, ok },
		wanted:       func(uid types.UID) bool { return uid == "wanted" },
		running:      func() ([]*container.RunningPod, time.Time) { return listed, listedAt },
		sourcesReady: func() bool { return ready },
	}

	check := func(when string, want map[types.UID]bool) {
		t.Helper()
		for uid, gone := range want {
			if got := p.ContainersGone(uid); got != gone {
				t.Errorf("%s: %s gone = %v, want %v", when, uid, got, gone)
			}
		}
	}
	check("sources not seen", map[types.UID]bool{"syncing": false, "terminating": false, "terminated": true, "unknown": false})
	ready = true
	check("runtime not listed", map[types.UID]bool{"unknown": false, "wanted": false})
	listedAt = time.Now()
	check("all known", map[types.UID]bool{
		"wanted": false, "orphan-running": false, "orphan-sandbox": false, "orphan-exited": true, "unknown": true,
	})
}
