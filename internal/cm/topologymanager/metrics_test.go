package topologymanager

import (
	"testing"

	"github.com/nodelet/nodelet/internal/lib/metrics/metricstest"
)

// metricValue sums a counter's (or a histogram's sample count's) series whose labels hold want.
func metricValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	v, _ := metricstest.Value(t, name, want)
	return v
}

func TestAdmissionMetrics(t *testing.T) {
	podScope := map[string]string{"scope": "pod", "boundary": "numa_node"}
	before := map[string]float64{
		"requests": metricValue(t, "kubelet_topology_manager_admission_requests_total", nil),
		"errors":   metricValue(t, "kubelet_topology_manager_admission_errors_total", nil),
		"duration": metricValue(t, "kubelet_topology_manager_admission_duration_ms", nil),
		"aligned":  metricValue(t, "kubelet_container_aligned_compute_resources_count", podScope),
		"failed":   metricValue(t, "kubelet_container_aligned_compute_resources_failure_count", podScope),
	}
	cpu := &fakeProvider{pod: provided{"cpu": {hint(true, 0)}}}
	mgr := newManager(t, twoNodes(), PolicySingleNUMANode, ScopePod, cpu)
	if ok, _, _ := mgr.Admit(testPod(nil, "a")); !ok {
		t.Fatal("refused")
	}
	cpu.pod = provided{"cpu": {}}
	if ok, _, _ := mgr.Admit(testPod(nil, "b")); ok {
		t.Fatal("admitted a pod whose CPUs cannot be found")
	}
	after := map[string]float64{
		"requests": metricValue(t, "kubelet_topology_manager_admission_requests_total", nil),
		"errors":   metricValue(t, "kubelet_topology_manager_admission_errors_total", nil),
		"duration": metricValue(t, "kubelet_topology_manager_admission_duration_ms", nil),
		"aligned":  metricValue(t, "kubelet_container_aligned_compute_resources_count", podScope),
		"failed":   metricValue(t, "kubelet_container_aligned_compute_resources_failure_count", podScope),
	}
	want := map[string]float64{"requests": 2, "errors": 1, "duration": 2, "aligned": 1, "failed": 1}
	for k, d := range want {
		if after[k]-before[k] != d {
			t.Errorf("%s went from %v to %v, want +%v", k, before[k], after[k], d)
		}
	}
}
