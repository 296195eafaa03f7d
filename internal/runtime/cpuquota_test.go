package runtime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// limitedCtr is a container of a Guaranteed pod limited to cpu.
func limitedCtr(name, cpu string) v1.Container {
	c := ctr(name)
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")}
	c.Resources = v1.ResourceRequirements{Requests: rl, Limits: rl}
	return c
}

// pinnedOnly is the CPU manager's answer for a pod whose container "pinned" holds CPUs.
func pinnedOnly(_ *v1.Pod, c *v1.Container) bool { return c.Name == "pinned" }

// DisableCPUQuotaWithExclusiveCPUs: a container the CPU manager gave CPUs of its own runs
// without a quota (-1 over the usual period, the kernel's "max"); its fractional sibling keeps
// its quota. With the gate off (no hook) both are limited, and without cpuCFSQuota neither.
func TestExclusiveCPUsRunWithoutQuota(t *testing.T) {
	type quota struct{ period, quota int64 }
	for _, tc := range []struct {
		name          string
		exclusive     func(*v1.Pod, *v1.Container) bool
		noQuota       bool
		pinned, other quota
	}{
		{"gate on", pinnedOnly, false, quota{100000, -1}, quota{100000, 50000}},
		{"gate off", nil, false, quota{100000, 100000}, quota{100000, 50000}},
		{"cpuCFSQuota off", pinnedOnly, true, quota{}, quota{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, func(o *Options) { o.ExclusiveCPUs, o.NoCPUQuota = tc.exclusive, tc.noQuota })
			e.sync(newPod("g", limitedCtr("pinned", "1"), limitedCtr("shared", "500m")))
			for name, want := range map[string]quota{"pinned": tc.pinned, "shared": tc.other} {
				res := e.running(name).Config.Linux.Resources
				if got := (quota{res.CpuPeriod, res.CpuQuota}); got != want {
					t.Errorf("%s: period/quota %v, want %v", name, got, want)
				}
			}
		})
	}
}
