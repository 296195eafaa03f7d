package cpumanager

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// cpuResource is the resource name the hints are given under.
const cpuResource = string(v1.ResourceCPU)

// containerHints are the NUMA placements that could hold c's exclusive CPUs: nil when c gets
// none (no preference), the placements of the CPUs it already holds when it has some.
func (p *static) containerHints(s *state, pod *v1.Pod, c *v1.Container) map[string][]topology.Hint {
	n := p.guaranteedCPUs(pod, c)
	if n == 0 {
		return nil
	}
	if held, ok := s.assigned.get(string(pod.UID), c.Name); ok {
		if held.Size() != n {
			klog.InfoS("CPUs already allocated to container with different number than request", "pod", klog.KObj(pod), "containerName", c.Name, "requestedSize", n, "allocatedSize", held.Size())
			return map[string][]topology.Hint{cpuResource: {}}
		}
		return map[string][]topology.Hint{cpuResource: p.hints(held, cpuset.New(), n)}
	}
	return map[string][]topology.Hint{cpuResource: p.hints(p.available(s), p.reuse[string(pod.UID)], n)}
}

// podHints are the placements that could hold the whole pod's exclusive CPUs (scope pod).
func (p *static) podHints(s *state, pod *v1.Pod) map[string][]topology.Hint {
	n := p.podGuaranteedCPUs(pod)
	if n == 0 {
		return nil
	}
	held := cpuset.New()
	for _, c := range allContainers(pod) {
		cpus, ok := s.assigned.get(string(pod.UID), c.Name)
		if !ok {
			continue
		}
		if cpus.Size() != p.guaranteedCPUs(pod, c) {
			klog.InfoS("CPUs already allocated to container with different number than request", "pod", klog.KObj(pod), "containerName", c.Name, "allocatedSize", cpus.Size())
			return map[string][]topology.Hint{cpuResource: {}}
		}
		held = held.Union(cpus)
	}
	if held.Size() == n {
		return map[string][]topology.Hint{cpuResource: p.hints(held, cpuset.New(), n)}
	}
	reusable := p.reuse[string(pod.UID)].Union(held)
	return map[string][]topology.Hint{cpuResource: p.hints(p.available(s), reusable, n)}
}

// hints lists every set of NUMA nodes on which available (plus reusable, which must all lie
// within the set) holds n CPUs, smallest sets first; those as small as the fewest nodes the
// machine could hold n CPUs on are preferred.
func (p *static) hints(available, reusable cpuset.CPUSet, n int) []topology.Hint {
	nodes := p.machine.ids(numaOf, nil)
	narrowest := len(nodes)
	hints := []topology.Hint{}
	for k := 1; k <= len(nodes); k++ {
		combinations(nodes, k, func(ids []int) bool {
			mask := topology.MaskOf(ids...)
			if p.machine.in(numaOf, ids...).Size() >= n {
				narrowest = min(narrowest, k)
			}
			if fits(p.machine, mask, available, reusable, n) {
				hints = append(hints, topology.Hint{NUMANodes: mask})
			}
			return true
		})
	}
	for i := range hints {
		hints[i].Preferred = hints[i].NUMANodes.Count() == narrowest
	}
	return hints
}

// fits says whether the nodes of mask hold all of reusable and, with available, n CPUs.
func fits(machine layout, mask topology.Mask, available, reusable cpuset.CPUSet, n int) bool {
	count := 0
	for _, id := range reusable.UnsortedList() {
		if !mask.Has(machine[id].NUMANode) {
			return false
		}
		count++
	}
	for _, id := range available.UnsortedList() {
		if mask.Has(machine[id].NUMANode) {
			count++
		}
	}
	return count >= n
}

// allContainers returns the init containers then the app containers.
func allContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}
