package syncloop

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/podworkers"
)

// ActivePods is nodelet's one definition of the pods it runs: admitted (the pod manager has
// them and a worker syncs them), not being terminated and not finished. Admission counts
// them; eviction, node shutdown, resizes, devices and the sweep of per-pod state read them.
type ActivePods struct {
	Pods interface{ Pods() []*v1.Pod }
	// Workers says which pods a worker syncs.
	Workers interface {
		Known() map[types.UID]podworkers.State
	}
	// Status is the pod's last recorded status; nil when none is kept (a finished pod is
	// then told by its worker alone).
	Status func(uid types.UID) (v1.PodStatus, bool)
}

// List returns the active pods.
func (a ActivePods) List() []*v1.Pod {
	known := a.Workers.Known()
	var out []*v1.Pod
	for _, p := range a.Pods.Pods() {
		if state, ok := known[p.UID]; !ok || state != podworkers.Syncing {
			continue
		}
		if a.Status != nil {
			if st, ok := a.Status(p.UID); ok && (st.Phase == v1.PodFailed || st.Phase == v1.PodSucceeded) {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}
