package podresources

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// The service's counters, under upstream's names, help texts and label. The errors of List and
// GetAllocatableResources are exported as upstream does, though neither method fails.
var (
	requestsTotal = counter("kubelet_pod_resources_endpoint_requests_total",
		"Cumulative number of requests to the PodResource endpoint. Broken down by server api version.")
	requestsList, errorsList                     = endpointCounters("list", "List")
	requestsGetAllocatable, errorsGetAllocatable = endpointCounters("get_allocatable", "GetAllocatableResources")
	requestsGet, errorsGet                       = endpointCounters("get", "Get")

	registerOnce, registerGetOnce sync.Once
)

// endpointCounters are the requests and errors counters of one method of the service: suffix
// ends their names, method names it in their help.
func endpointCounters(suffix, method string) (requests, errors *prometheus.CounterVec) {
	requests = counter("kubelet_pod_resources_endpoint_requests_"+suffix,
		"Number of requests to the PodResource "+method+" endpoint. Broken down by server api version.")
	errors = counter("kubelet_pod_resources_endpoint_errors_"+suffix,
		"Number of requests to the PodResource "+method+" endpoint which returned error. Broken down by server api version.")
	return requests, errors
}

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
