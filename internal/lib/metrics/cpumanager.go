package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The CPU manager's metrics. Only the static policy moves them; they are registered with the
// other resource managers' metrics.
var (
	cpuPinningRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_cpu_manager_pinning_requests_total",
		Help: alpha("The number of cpu core allocations which required pinning."),
	})
	cpuPinningErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_cpu_manager_pinning_errors_total",
		Help: alpha("The number of cpu core allocations which required pinning failed."),
	})
	cpuSharedPoolMillicores = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubelet_cpu_manager_shared_pool_size_millicores",
		Help: alpha("The size of the shared CPU pool for non-guaranteed QoS pods, in millicores."),
	})
	cpuExclusiveCount = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubelet_cpu_manager_exclusive_cpu_allocation_count",
		Help: alpha("The total number of CPUs exclusively allocated to containers running on this node"),
	})
	cpuAllocationPerNUMA = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubelet_cpu_manager_allocation_per_numa",
		Help: alpha("Number of CPUs allocated per NUMA node"),
	}, []string{AlignedNUMANode})
)

// InitCPUManager makes the static policy's alignment series exist from the start, zeroed, as
// upstream does: the physical_cpu success and failure counters and the uncore_cache one.
func InitCPUManager() {
	registerResourceManagers()
	alignedComputeResources.WithLabelValues(AlignScopeContainer, AlignedPhysicalCPU).Add(0)
	alignedComputeResourcesFailures.WithLabelValues(AlignScopeContainer, AlignedPhysicalCPU).Add(0)
	alignedComputeResources.WithLabelValues(AlignScopeContainer, AlignedUncoreCache).Add(0)
}

// CPUPinning counts one container the static policy was asked to give exclusive CPUs, and
// (failed) one it could not.
func CPUPinning(failed bool) {
	registerResourceManagers()
	cpuPinningRequests.Inc()
	if failed {
		cpuPinningErrors.Inc()
	}
}

// SetCPUPools publishes the static policy's pools: the shared pool's size (reserved CPUs not
// counted), the CPUs held exclusively, and how many of those are on each NUMA node (every
// node of the machine, 0 included).
func SetCPUPools(sharedCPUs, exclusiveCPUs int, exclusivePerNUMA map[int]int) {
	registerResourceManagers()
	cpuSharedPoolMillicores.Set(float64(sharedCPUs * 1000))
	cpuExclusiveCount.Set(float64(exclusiveCPUs))
	for node, count := range exclusivePerNUMA {
		cpuAllocationPerNUMA.WithLabelValues(strconv.Itoa(node)).Set(float64(count))
	}
}
