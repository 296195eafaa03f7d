package memorymanager

import "github.com/prometheus/client_golang/prometheus"

// The memory manager's metrics, under upstream's names (app registers them).
var (
	metricPinningRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_memory_manager_pinning_requests_total",
		Help: "[ALPHA] Containers of Guaranteed pods the memory manager was asked to pin to NUMA nodes.",
	})
	metricPinningErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubelet_memory_manager_pinning_errors_total",
		Help: "[ALPHA] Containers of Guaranteed pods the memory manager could not pin to NUMA nodes (the pod was refused).",
	})
)

// Collectors are the memory manager's metrics, for the metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{metricPinningRequests, metricPinningErrors}
}
