package podresources

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodelet/nodelet/internal/metrics"
)

// The service's counters, under upstream's names, help texts and label. The errors of List and
// GetAllocatableResources are exported as upstream does, though neither method fails.
var (
	requestsTotal = counter("kubelet_pod_resources_endpoint_requests_total",
		"Cumulative number of requests to the PodResource endpoint. Broken down by server api version.")
	requestsList = counter("kubelet_pod_resources_endpoint_requests_list",
		"Number of requests to the PodResource List endpoint. Broken down by server api version.")
	requestsGetAllocatable = counter("kubelet_pod_resources_endpoint_requests_get_allocatable",
		"Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version.")
	errorsList = counter("kubelet_pod_resources_endpoint_errors_list",
		"Number of requests to the PodResource List endpoint which returned error. Broken down by server api version.")
	errorsGetAllocatable = counter("kubelet_pod_resources_endpoint_errors_get_allocatable",
		"Number of requests to the PodResource GetAllocatableResources endpoint which returned error. Broken down by server api version.")
	requestsGet = counter("kubelet_pod_resources_endpoint_requests_get",
		"Number of requests to the PodResource Get endpoint. Broken down by server api version.")
	errorsGet = counter("kubelet_pod_resources_endpoint_errors_get",
		"Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version.")

	registerOnce, registerGetOnce sync.Once
)

func counter(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: "[ALPHA] " + help}, []string{"server_api_version"})
}

// registerMetrics exports the counters on nodelet's registry; Get's only with the
// KubeletPodResourcesGet gate on, as upstream.
func registerMetrics(getEnabled bool) {
	registerOnce.Do(func() {
		metrics.Registry().MustRegister(requestsTotal, requestsList, requestsGetAllocatable, errorsList, errorsGetAllocatable)
	})
	if getEnabled {
		registerGetOnce.Do(func() { metrics.Registry().MustRegister(requestsGet, errorsGet) })
	}
}
