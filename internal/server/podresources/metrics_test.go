package podresources

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCountersCarryUpstreamNamesAndHelp(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(requestsTotal, requestsList, requestsGetAllocatable, errorsList, errorsGetAllocatable, requestsGet, errorsGet)
	for _, c := range []*prometheus.CounterVec{requestsTotal, requestsList, requestsGetAllocatable, errorsList, errorsGetAllocatable, requestsGet, errorsGet} {
		c.WithLabelValues("v1").Add(0)
	}
	const by = " Broken down by server api version."
	want := map[string]string{
		"kubelet_pod_resources_endpoint_requests_total":           "Cumulative number of requests to the PodResource endpoint." + by,
		"kubelet_pod_resources_endpoint_requests_list":            "Number of requests to the PodResource List endpoint." + by,
		"kubelet_pod_resources_endpoint_requests_get_allocatable": "Number of requests to the PodResource GetAllocatableResources endpoint." + by,
		"kubelet_pod_resources_endpoint_requests_get":             "Number of requests to the PodResource Get endpoint." + by,
		"kubelet_pod_resources_endpoint_errors_list":              "Number of requests to the PodResource List endpoint which returned error." + by,
		"kubelet_pod_resources_endpoint_errors_get_allocatable":   "Number of requests to the PodResource GetAllocatableResources endpoint which returned error." + by,
		"kubelet_pod_resources_endpoint_errors_get":               "Number of requests to the PodResource Get endpoint which returned error." + by,
	}
	for name, help := range want {
		want[name] = "[ALPHA] " + help
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range families {
		got[f.GetName()] = f.GetHelp()
		if l := f.GetMetric()[0].GetLabel(); len(l) != 1 || l[0].GetName() != "server_api_version" {
			t.Errorf("%s labels %v, want server_api_version", f.GetName(), l)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("counters %v\nwant %v", got, want)
	}
}
