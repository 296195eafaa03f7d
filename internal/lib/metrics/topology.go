package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Labels of kubelet_container_aligned_compute_resources_count and its _failure_count: the
// scope the resources were aligned at and the boundary they were aligned on.
const (
	AlignScopeContainer = "container"
	AlignScopePod       = "pod"
	AlignedNUMANode     = "numa_node"
	AlignedPhysicalCPU  = "physical_cpu"
	AlignedUncoreCache  = "uncore_cache"
)

var (
	topologyAdmissions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_topology_manager_admission_requests_total",
		Help: alpha("The number of admission requests where resources have to be aligned."),
	})
	topologyAdmissionErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_topology_manager_admission_errors_total",
		Help: alpha("The number of admission request failures where resources could not be aligned."),
	})
	topologyAdmissionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubelet_topology_manager_admission_duration_ms",
		Help:    alpha("Duration in milliseconds to serve a pod admission request."),
		Buckets: prometheus.ExponentialBuckets(.05, 2, 15),
	})
	alignedComputeResources = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_container_aligned_compute_resources_count",
		Help: alpha("Cumulative number of aligned compute resources allocated to containers by alignment type."),
	}, []string{"scope", "boundary"})
	alignedComputeResourcesFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_container_aligned_compute_resources_failure_count",
		Help: alpha("Cumulative number of failures to allocate aligned compute resources to containers by alignment type."),
	}, []string{"scope", "boundary"})

	resourceManagersOnce sync.Once
)

// registerResourceManagers adds the resource managers' metrics to the registry, once.
func registerResourceManagers() {
	resourceManagersOnce.Do(func() {
		Registry().MustRegister(topologyAdmissions, topologyAdmissionErrors, topologyAdmissionDuration,
			alignedComputeResources, alignedComputeResourcesFailures,
			cpuPinningRequests, cpuPinningErrors, cpuSharedPoolMillicores, cpuExclusiveCount, cpuAllocationPerNUMA)
	})
}

// InitTopologyManager makes the topology manager's series exist from the start, as upstream
// does: the admission counters, and with aligning (any policy but none) zeroed NUMA-node
// alignment counters for both scopes.
func InitTopologyManager(aligning bool) {
	registerResourceManagers()
	if !aligning {
		return
	}
	for _, scope := range []string{AlignScopeContainer, AlignScopePod} {
		alignedComputeResources.WithLabelValues(scope, AlignedNUMANode).Add(0)
		alignedComputeResourcesFailures.WithLabelValues(scope, AlignedNUMANode).Add(0)
	}
}

// ObserveTopologyAdmission counts one topology manager admission and how long it took.
func ObserveTopologyAdmission(took time.Duration, refused bool) {
	registerResourceManagers()
	topologyAdmissions.Inc()
	topologyAdmissionDuration.Observe(float64(took.Milliseconds()))
	if refused {
		topologyAdmissionErrors.Inc()
	}
}

// AlignedComputeResources counts one allocation aligned at scope on boundary, or (failed) one
// that could not be.
func AlignedComputeResources(scope, boundary string, failed bool) {
	registerResourceManagers()
	if failed {
		alignedComputeResourcesFailures.WithLabelValues(scope, boundary).Inc()
		return
	}
	alignedComputeResources.WithLabelValues(scope, boundary).Inc()
}
