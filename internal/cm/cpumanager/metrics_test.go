package cpumanager

import (
	"strconv"
	"testing"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/lib/metrics/metricstest"
)

func value(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := metricstest.Value(t, name, labels)
	if !ok {
		t.Fatalf("no %s%v in the registry", name, labels)
	}
	return v
}

const (
	pinningRequests = "kubelet_cpu_manager_pinning_requests_total"
	pinningErrors   = "kubelet_cpu_manager_pinning_errors_total"
	sharedPool      = "kubelet_cpu_manager_shared_pool_size_millicores"
	exclusiveCount  = "kubelet_cpu_manager_exclusive_cpu_allocation_count"
	perNUMA         = "kubelet_cpu_manager_allocation_per_numa"
	aligned         = "kubelet_container_aligned_compute_resources_count"
	alignFailed     = "kubelet_container_aligned_compute_resources_failure_count"
)

func boundary(b string) map[string]string {
	return map[string]string{"scope": "container", "boundary": b}
}
func numa(id string) map[string]string { return map[string]string{"numa_node": id} }

// checkPools checks the pool gauges: shared millicores, exclusive CPUs, and those per NUMA node.
func checkPools(t *testing.T, when string, shared, exclusive float64, byNUMA ...float64) {
	t.Helper()
	if got := value(t, sharedPool, nil); got != shared {
		t.Errorf("%s: %s = %v, want %v", when, sharedPool, got, shared)
	}
	if got := value(t, exclusiveCount, nil); got != exclusive {
		t.Errorf("%s: %s = %v, want %v", when, exclusiveCount, got, exclusive)
	}
	for id, want := range byNUMA {
		if got := value(t, perNUMA, numa(strconv.Itoa(id))); got != want {
			t.Errorf("%s: %s{numa_node=%d} = %v, want %v", when, perNUMA, id, got, want)
		}
	}
}

func TestMetricsAtStart(t *testing.T) {
	newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	// CPU 0 is reserved: the shared pool counts only CPU 1, as upstream's does.
	checkPools(t, "at start", 1000, 0, 0)
	for _, b := range []string{metrics.AlignedPhysicalCPU, metrics.AlignedUncoreCache} {
		if _, ok := metricstest.Value(t, aligned, boundary(b)); !ok {
			t.Errorf("no %s{boundary=%s} at start", aligned, b)
		}
	}
	if _, ok := metricstest.Value(t, alignFailed, boundary(metrics.AlignedPhysicalCPU)); !ok {
		t.Errorf("no %s{boundary=physical_cpu} at start", alignFailed)
	}
}

func TestPoolGaugesFollowAllocateAndRelease(t *testing.T) {
	// Two sockets, one NUMA node each, two cores each: CPUs 0,1 on node 0, 2,3 on node 1.
	m, _, _ := newManager(t, topology.Synthetic(2, 1, 2, 1, 0), cmpolicy.CPUStatic, 1, nil)
	checkPools(t, "at start", 3000, 0, 0, 0)
	uncore := value(t, aligned, boundary(metrics.AlignedUncoreCache))

	wide := pod("wide", "3", "app")
	if err := allocate(t, m, wide); err != nil {
		t.Fatal(err)
	}
	checkPools(t, "3 CPUs held", 0, 3, 1, 2)
	if got := value(t, aligned, boundary(metrics.AlignedUncoreCache)); got != uncore {
		t.Errorf("CPUs across both sockets counted as uncore-cache aligned (%v → %v)", uncore, got)
	}

	m.RemovePod(wide.UID)
	checkPools(t, "after release", 3000, 0, 0, 0)

	if err := allocate(t, m, pod("narrow", "2", "app")); err != nil {
		t.Fatal(err)
	}
	if got := value(t, aligned, boundary(metrics.AlignedUncoreCache)); got != uncore+1 {
		t.Errorf("2 CPUs of one socket: uncore_cache aligned %v, want %v", got, uncore+1)
	}
	checkPools(t, "2 CPUs held", 1000, 2, 0, 2)
}

func TestPinningCounters(t *testing.T) {
	opts := map[string]string{cmpolicy.OptionFullPCPUsOnly: "true"}
	m, _, _ := newManager(t, topology.Synthetic(1, 1, 2, 2, 0), cmpolicy.CPUStatic, 1, opts)
	requests, errs := value(t, pinningRequests, nil), value(t, pinningErrors, nil)
	physical, physicalFailed := value(t, aligned, boundary(metrics.AlignedPhysicalCPU)), value(t, alignFailed, boundary(metrics.AlignedPhysicalCPU))

	if err := allocate(t, m, pod("odd", "1", "app")); err == nil {
		t.Fatal("1 CPU on 2 threads per core was pinned")
	}
	even := pod("even", "2", "app")
	if err := allocate(t, m, even); err != nil {
		t.Fatal(err)
	}
	if err := allocate(t, m, pod("shared", "", "app")); err != nil {
		t.Fatal(err)
	}
	// A container that already holds CPUs is asked again (a re-admission): upstream counts it.
	if err := allocate(t, m, even); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{pinningRequests, nil, requests + 3},
		{pinningErrors, nil, errs + 1},
		{aligned, boundary(metrics.AlignedPhysicalCPU), physical + 2},
		{alignFailed, boundary(metrics.AlignedPhysicalCPU), physicalFailed + 1},
	} {
		if got := value(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestPhysicalCPUAlignmentOnlyUnderFullPCPUsOnly(t *testing.T) {
	m, _, _ := newManager(t, topology.Synthetic(1, 1, 2, 2, 0), cmpolicy.CPUStatic, 1, nil)
	physical := value(t, aligned, boundary(metrics.AlignedPhysicalCPU))
	if err := allocate(t, m, pod("one", "1", "app")); err != nil {
		t.Fatal(err)
	}
	if got := value(t, aligned, boundary(metrics.AlignedPhysicalCPU)); got != physical {
		t.Errorf("physical_cpu alignment counted without full-pcpus-only: %v → %v", physical, got)
	}
}

func TestPoolGaugesAfterARestart(t *testing.T) {
	m, _, dir := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	if err := allocate(t, m, pod("g", "1", "app")); err != nil {
		t.Fatal(err)
	}
	newManagerIn(t, t.TempDir(), twoCPUs, cmpolicy.CPUStatic, 1, nil) // another start resets the gauges
	checkPools(t, "another manager's start", 1000, 0, 0)
	newManagerIn(t, dir, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	checkPools(t, "restored", 0, 1, 1)
}

func TestReconcileReleaseUpdatesThePools(t *testing.T) {
	m, _, _ := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	if err := allocate(t, m, pod("gone", "1", "app")); err != nil {
		t.Fatal(err)
	}
	checkPools(t, "held", 0, 1, 1)
	m.removeStale(nil)
	m.removeStale(nil) // the second pass releases a pod missing twice
	checkPools(t, "released by reconcile", 1000, 0, 0)
}
