package cpumanager

import (
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// countPinning records one request for exclusive CPUs and whether it failed; under
// full-pcpus-only every request is also one for whole physical cores, counted as aligned or
// not on that boundary, as upstream.
func (p *static) countPinning(err error) {
	metrics.CPUPinning(err != nil)
	if p.opts.FullPCPUsOnly {
		metrics.AlignedComputeResources(metrics.AlignScopeContainer, metrics.AlignedPhysicalCPU, err != nil)
	}
}

// countUncoreAlignment counts a new allocation whose CPUs share one uncore (last-level) cache.
// The machine carries no cache IDs, so a CPU's uncore cache is its socket: what upstream
// assumes when cadvisor reports no uncore caches.
func (p *static) countUncoreAlignment(cpus cpuset.CPUSet) {
	if len(p.machine.keepOnly(cpus).ids(socketOf, nil)) <= 1 {
		metrics.AlignedComputeResources(metrics.AlignScopeContainer, metrics.AlignedUncoreCache, false)
	}
}

// publishPools sets the pool gauges from the state: the shared pool less the reserved CPUs,
// the CPUs held exclusively, and those per NUMA node. The caller holds mu (or is New).
func (m *Manager) publishPools() {
	held := m.state.assigned.all()
	perNUMA := map[int]int{}
	for _, id := range m.static.machine.ids(numaOf, nil) {
		perNUMA[id] = 0
	}
	for _, id := range held.List() {
		perNUMA[m.static.machine[id].NUMANode]++
	}
	metrics.SetCPUPools(m.static.available(&m.state).Size(), held.Size(), perNUMA)
}
