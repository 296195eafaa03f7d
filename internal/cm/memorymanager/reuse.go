package memorymanager

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// Regular init containers run one at a time and finish before the app containers start, so a
// pod's later containers may reuse the memory its init containers were given on the same nodes
// instead of taking more: the pod holds the larger of the two, as the scheduler counts it.
// Sidecars (restartable init containers) keep running, so their memory is never reused.

// reusableOn is the memory of one kind on mask that pod uid's init containers leave for reuse.
func (s *static) reusableOn(uid string, mask topology.Mask, name v1.ResourceName) uint64 {
	if s.reusableFor != uid {
		return 0
	}
	return s.reusable[mask][name]
}

// noteReusable updates the reusable memory after c was given blocks: a regular init container
// offers its blocks (the largest of them per mask and kind); any other container uses them up.
func (s *static) noteReusable(pod *v1.Pod, c *v1.Container, blocks []block) {
	uid := string(pod.UID)
	if s.reusableFor != uid {
		s.reusableFor, s.reusable = uid, map[topology.Mask]map[v1.ResourceName]uint64{}
	}
	regularInit := isRegularInit(pod, c.Name)
	for _, b := range blocks {
		mask := maskOf(b.NUMAAffinity)
		if s.reusable[mask] == nil {
			s.reusable[mask] = map[v1.ResourceName]uint64{}
		}
		left := s.reusable[mask][b.Type]
		switch {
		case regularInit:
			s.reusable[mask][b.Type] = max(left, b.Size)
		case b.Size >= left:
			s.reusable[mask][b.Type] = 0
		default:
			s.reusable[mask][b.Type] = left - b.Size
		}
	}
}

// shrinkInitBlocks takes c's blocks' sizes off the blocks of the regular init containers
// before it on the same nodes, so that the pod's blocks add up to the memory set aside for it
// (the reused part is counted once).
func (s *static) shrinkInitBlocks(pod *v1.Pod, c *v1.Container, blocks []block) {
	uid := string(pod.UID)
	for _, b := range blocks {
		size := b.Size
		for i := range pod.Spec.InitContainers {
			init := &pod.Spec.InitContainers[i]
			if init.Name == c.Name || size == 0 {
				break
			}
			if sidecar.Is(init) {
				continue
			}
			initBlocks := s.entries.get(uid, init.Name)
			for j := range initBlocks {
				ib := &initBlocks[j]
				if ib.Size == 0 || ib.Type != b.Type || maskOf(ib.NUMAAffinity) != maskOf(b.NUMAAffinity) {
					continue
				}
				cut := min(size, ib.Size)
				ib.Size -= cut
				size -= cut
			}
		}
	}
}

// isRegularInit says whether the container named name is one of pod's init containers that
// runs to completion (not a sidecar).
func isRegularInit(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return !sidecar.Is(&pod.Spec.InitContainers[i])
		}
	}
	return false
}
