package app

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/admission"
	"github.com/nodelet/nodelet/internal/allocation"
	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/podworkers"
	"github.com/nodelet/nodelet/internal/resize"
	"github.com/nodelet/nodelet/internal/runtime"
	"github.com/nodelet/nodelet/internal/syncloop"
)

// newResizer loads the pods' allocated and actuated resources from the root directory.
func (n *agent) newResizer() error {
	allocs, err := allocation.New(n.cfg.RootDir)
	if err != nil {
		return err
	}
	n.resizer = &resize.Resizer{Allocations: allocs}
	return nil
}

// resizeRuntimeOptions gives the runtime manager what it actuates resizes with.
func (n *agent) resizeRuntimeOptions(opts *runtime.Options) {
	opts.Actuated = n.resizer.Allocations
	if n.cm.OwnsPodCgroups() {
		opts.PodCgroups = podCgroups{n.cm}
	}
}

// wireResize connects the resize decisions to admission (which counts pods with their
// allocations), the active pods and the sync queue (the sweep, release.go, removes the
// checkpoints of pods gone).
// It is the graph's other link made after construction (volumes.go has the first): the pod
// sync decides resizes through the resizer, and admission (through eviction) and the active
// pods need the pod workers, which are made over the pod sync.
func (n *agent) wireResize(queue *syncloop.Queue, workers *podworkers.PodWorkers, admit *admission.Admitter) {
	r := n.resizer
	r.Fit = admit.FitsResources
	r.Allocatable = admit.Allocatable
	r.ActivePods = func() []*v1.Pod { return n.activePods(workers) }
	r.Wake = func(uid types.UID) { queue.Enqueue(uid, 0) }
	r.Backoff = n.syncer.Backoff
	r.Pinned = n.resizePinned
}

// podCgroups adapts the cgroup manager to what the runtime resizes pod cgroups through.
type podCgroups struct{ m *cm.ContainerManager }

func (p podCgroups) PodConfig(pod *v1.Pod) (runtime.PodCgroupConfig, runtime.PodCgroupConfig, error) {
	current, desired, err := p.m.PodConfig(pod)
	return runtime.PodCgroupConfig(current), runtime.PodCgroupConfig(desired), err
}

func (p podCgroups) SetPodConfig(pod *v1.Pod, c runtime.PodCgroupConfig) error {
	return p.m.SetPodConfig(pod, cm.PodConfig(c))
}

func (p podCgroups) PodMemoryUsage(pod *v1.Pod) (int64, error) { return p.m.PodMemoryUsage(pod) }
