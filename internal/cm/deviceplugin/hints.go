package deviceplugin

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// ContainerHints returns, per plugin resource c requests whose plugin reports NUMA nodes, the
// NUMA node sets its request could be met on (the topology manager's HintProvider). A resource
// without topology is left out (no preference); one that cannot be met gets an empty list.
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topology.Hint {
	m.beginAdmission(pod.UID)
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]topology.Hint{}
	for name, n := range m.requests(c) {
		r := m.resources[name]
		if !r.hasTopology() {
			continue
		}
		held := m.pods[pod.UID][c.Name].held(name)
		out[name] = m.hintsFor(pod.UID, r, name, held, m.admission.reusable[name], int(n))
	}
	return out
}

// PodHints is ContainerHints for the pod as a whole (topology manager scope pod): the pod's
// request of a resource is what it holds at its peak, as the scheduler counts it.
func (m *Manager) PodHints(pod *v1.Pod) map[string][]topology.Hint {
	m.beginAdmission(pod.UID)
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]topology.Hint{}
	for name, n := range m.podRequests(pod) {
		r := m.resources[name]
		if !r.hasTopology() {
			continue
		}
		var held []string
		for _, cd := range m.pods[pod.UID] {
			held = append(held, cd.held(name)...)
		}
		slices.Sort(held)
		out[name] = m.hintsFor(pod.UID, r, name, slices.Compact(held), nil, n)
	}
	return out
}

// hintsFor returns the hints for n devices of resource name: from the devices held when there
// are any (a restart regenerates the same hints), else from the free ones and reusable. Called
// with m.mu held.
func (m *Manager) hintsFor(uid types.UID, r *pluginResource, name string, held, reusable []string, n int) []topology.Hint {
	if len(held) > 0 {
		if len(held) != n {
			klog.ErrorS(nil, "Devices already held differ from the request", "podUID", uid, "resource", name, "held", len(held), "requested", n)
			return []topology.Hint{}
		}
		return m.numaHints(r, held, nil, n)
	}
	inUse := m.inUse(name)
	var free []string
	for id := range r.healthy() {
		if !inUse[id] {
			free = append(free, id)
		}
	}
	if len(free)+len(reusable) < n {
		klog.InfoS("Not enough free devices for a topology hint", "podUID", uid, "resource", name, "requested", n, "available", len(free)+len(reusable))
		return []topology.Hint{}
	}
	return m.numaHints(r, free, reusable, n)
}

// numaHints returns every set of NUMA nodes holding n of available (with all of reusable in
// it), preferred when no smaller set could hold n devices of the resource at all.
func (m *Manager) numaHints(r *pluginResource, available, reusable []string, n int) []topology.Hint {
	onMask := func(mask topology.Mask, id string) bool {
		return slices.ContainsFunc(r.devices[id].numa, func(node int64) bool { return mask.Has(int(node)) })
	}
	narrowest := len(m.opts.NUMANodes)
	hints := []topology.Hint{}
	for _, mask := range numaMasks(m.opts.NUMANodes) {
		onNodes := 0
		for id := range r.devices {
			if onMask(mask, id) {
				onNodes++
			}
		}
		if onNodes >= n {
			narrowest = min(narrowest, mask.Count())
		}
		fits := 0
		outside := false
		for _, id := range reusable {
			if len(r.devices[id].numa) == 0 {
				continue
			}
			outside = outside || !onMask(mask, id)
			fits++
		}
		if outside {
			continue
		}
		for _, id := range available {
			if onMask(mask, id) {
				fits++
			}
		}
		if fits >= n {
			hints = append(hints, topology.Hint{NUMANodes: mask})
		}
	}
	for i := range hints {
		hints[i].Preferred = hints[i].NUMANodes.Count() == narrowest
	}
	return hints
}

// numaMasks returns every non-empty set of the nodes, smallest sets first.
func numaMasks(nodes []int) []topology.Mask {
	var out []topology.Mask
	for bits := 1; bits < 1<<len(nodes); bits++ {
		var ids []int
		for i, id := range nodes {
			if bits&(1<<i) != 0 {
				ids = append(ids, id)
			}
		}
		out = append(out, topology.MaskOf(ids...))
	}
	slices.SortStableFunc(out, func(a, b topology.Mask) int { return a.Count() - b.Count() })
	return out
}

// podRequests returns the pod's request of each plugin resource: the larger of what its app
// containers and sidecars hold together and what any init container holds next to the
// sidecars started before it. Called with m.mu held.
func (m *Manager) podRequests(pod *v1.Pod) map[string]int {
	out := map[string]int{}
	sidecars := map[string]int{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		for name, n := range m.requests(c) {
			if sidecar.Is(c) {
				sidecars[name] += int(n)
				out[name] = max(out[name], sidecars[name])
				continue
			}
			out[name] = max(out[name], sidecars[name]+int(n))
		}
	}
	apps := map[string]int{}
	for i := range pod.Spec.Containers {
		for name, n := range m.requests(&pod.Spec.Containers[i]) {
			apps[name] += int(n)
		}
	}
	for name, n := range sidecars {
		apps[name] += n
	}
	for name, n := range apps {
		out[name] = max(out[name], n)
	}
	return out
}
