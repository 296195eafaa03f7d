package metrics

import "testing"

func TestCPUManagerMetricsAreServed(t *testing.T) {
	InitCPUManager()
	SetCPUPools(3, 1, map[int]int{0: 1, 1: 0})
	CPUPinning(true)
	families := scrape(t, Handler())
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kubelet_cpu_manager_shared_pool_size_millicores", nil, 3000},
		{"kubelet_cpu_manager_exclusive_cpu_allocation_count", nil, 1},
		{"kubelet_cpu_manager_allocation_per_numa", map[string]string{"numa_node": "0"}, 1},
		{"kubelet_cpu_manager_allocation_per_numa", map[string]string{"numa_node": "1"}, 0},
		{"kubelet_container_aligned_compute_resources_count", map[string]string{"scope": "container", "boundary": "uncore_cache"}, 0},
		{"kubelet_container_aligned_compute_resources_failure_count", map[string]string{"scope": "container", "boundary": "physical_cpu"}, 0},
	} {
		m := findMetric(t, families, c.name, c.labels)
		if got := m.GetGauge().GetValue() + m.GetCounter().GetValue(); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := findMetric(t, families, "kubelet_cpu_manager_pinning_errors_total", nil).GetCounter().GetValue(); got < 1 {
		t.Errorf("pinning errors %v after a failed pinning", got)
	}
	if help := families["kubelet_cpu_manager_pinning_requests_total"].GetHelp(); help != "[ALPHA] The number of cpu core allocations which required pinning." {
		t.Errorf("help %q", help)
	}
}
