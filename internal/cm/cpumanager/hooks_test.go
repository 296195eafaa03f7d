package cpumanager

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

// pinnedAndShared is a static manager over 4 CPUs (1 reserved) and the pod g it placed: its
// container "app" holds a CPU of its own, "frac" (500m) is on the shared pool.
func pinnedAndShared(t *testing.T) (*Manager, *v1.Pod) {
	t.Helper()
	m, _, _ := newManager(t, topology.Synthetic(1, 1, 4, 1, 0), cmpolicy.CPUStatic, 1, nil)
	g := pod("g", "1", "app")
	g.Spec.Containers = append(g.Spec.Containers, container("frac", "500m"))
	if err := allocate(t, m, g); err != nil {
		t.Fatal(err)
	}
	return m, g
}

// The container hook pins a container to its exclusive CPUs, a fractional one to the shared
// pool; the none policy sets no cpuset.
func TestContainerHookSetsTheCpuset(t *testing.T) {
	m, g := pinnedAndShared(t)
	for i, want := range []string{m.ContainerCPUs(g.UID, "app").String(), m.SharedCPUs().String()} {
		cfg := &runtimeapi.ContainerConfig{}
		if err := m.ApplyContainer(context.Background(), g, &g.Spec.Containers[i], cfg); err != nil {
			t.Fatal(err)
		}
		if got := cfg.GetLinux().GetResources().GetCpusetCpus(); got != want || got == "" {
			t.Errorf("%s: cpuset %q, want %q", g.Spec.Containers[i].Name, got, want)
		}
	}
	none, _, _ := newManager(t, twoCPUs, cmpolicy.CPUNone, 0, nil)
	cfg := &runtimeapi.ContainerConfig{}
	if err := none.ApplyContainer(context.Background(), g, &g.Spec.Containers[0], cfg); err != nil || cfg.Linux != nil {
		t.Errorf("none policy: err %v, linux %v", err, cfg.Linux)
	}
}

// The quota hook lifts the quota of a container holding exclusive CPUs only, and only a
// quota that is set (cpuCFSQuota on).
func TestQuotaHookLiftsTheQuotaOfExclusiveCPUs(t *testing.T) {
	m, g := pinnedAndShared(t)
	hook := QuotaHook{CPUs: m}
	for _, tc := range []struct {
		container   int
		quota, want int64
	}{{0, 100000, -1}, {1, 50000, 50000}, {0, 0, 0}} {
		res := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: tc.quota}
		hook.ApplyResources(g, &g.Spec.Containers[tc.container], res)
		if res.CpuQuota != tc.want || res.CpuPeriod != 100000 {
			t.Errorf("%s with quota %d: period/quota %d/%d, want 100000/%d", g.Spec.Containers[tc.container].Name, tc.quota, res.CpuPeriod, res.CpuQuota, tc.want)
		}
	}
}
