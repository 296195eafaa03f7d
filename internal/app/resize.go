package app

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/pod/admission"
	"github.com/nodelet/nodelet/internal/pod/allocation"
	"github.com/nodelet/nodelet/internal/pod/resize"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
)

// newResizer loads the pods' allocated and actuated resources from the root directory. It
// decides resizes with admission's resource fit over the active pods, wakes the pods it
// deferred through the sync queue, and resets the crash-loop back-off of the containers a
// resize changes; all of these are made before it.
func (n *agent) newResizer() error {
	allocs, err := allocation.New(n.cfg.RootDir)
	if err != nil {
		return err
	}
	queue := n.queue
	n.resizer = &resize.Resizer{
		Allocations: allocs,
		Fit:         admission.Fit{Allocatable: n.cluster.allocatable(), Devices: admissionDevices(n.devices)}.Fits,
		Allocatable: n.cluster.allocatable(),
		ActivePods:  n.activePods,
		Wake:        func(uid types.UID) { queue.Enqueue(uid, 0) },
		Backoff:     n.backoff,
		Pinned:      n.resizePinned,
	}
	return nil
}

// resizeRuntimeOptions gives the runtime manager what it actuates resizes with.
func (n *agent) resizeRuntimeOptions(opts *kuberuntime.Options) {
	opts.Actuated = n.resizer.Allocations
	if n.cm.OwnsPodCgroups() {
		opts.PodCgroups = podCgroups{n.cm}
	}
}

// podCgroups adapts the cgroup manager to what the runtime resizes pod cgroups through.
type podCgroups struct{ m *cm.ContainerManager }

func (p podCgroups) PodConfig(pod *v1.Pod) (kuberuntime.PodCgroupConfig, kuberuntime.PodCgroupConfig, error) {
	current, desired, err := p.m.PodConfig(pod)
	return kuberuntime.PodCgroupConfig(current), kuberuntime.PodCgroupConfig(desired), err
}

func (p podCgroups) SetPodConfig(pod *v1.Pod, c kuberuntime.PodCgroupConfig) error {
	return p.m.SetPodConfig(pod, cm.PodConfig(c))
}

func (p podCgroups) PodMemoryUsage(pod *v1.Pod) (int64, error) { return p.m.PodMemoryUsage(pod) }
