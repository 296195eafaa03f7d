package kuberuntime

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// memoryOf starts pod on a manager with settings and returns each container's resources.
func memoryOf(t *testing.T, settings MemorySettings, pod *v1.Pod) map[string]*runtimeapi.LinuxContainerResources {
	t.Helper()
	e := newTestEnv(t, func(o *Options) { o.Memory = settings })
	e.sync(pod)
	out := map[string]*runtimeapi.LinuxContainerResources{}
	for _, c := range pod.Spec.Containers {
		out[c.Name] = e.running(c.Name).Config.Linux.Resources
	}
	return out
}

func memCtr(name, request, limit string) v1.Container {
	c := ctr(name, "sleep", "1")
	c.Resources = v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	if request != "" {
		c.Resources.Requests = quantities("memory", request)
	}
	if limit != "" {
		c.Resources.Limits = quantities("memory", limit)
	}
	return c
}

// On cgroup v1 (these hosts) upstream caps memory+swap at the memory limit wherever the
// memsw controller is there, whatever swapBehavior says, and sends nothing unified.
func TestSwapOnCgroupV1AsUpstream(t *testing.T) {
	pod := newPod("v1", memCtr("limited", "64Mi", "128Mi"), memCtr("unlimited", "", ""))
	for _, behavior := range []string{"", NoSwap, LimitedSwap} {
		got := memoryOf(t, MemorySettings{SwapController: true, SwapBehavior: behavior, MemoryCapacity: 8 << 30, SwapCapacity: 2 << 30}, pod)
		if l := got["limited"]; l.MemorySwapLimitInBytes != 128<<20 || l.Unified != nil {
			t.Errorf("%q: limited container: memory+swap %d, unified %v; want %d and none", behavior, l.MemorySwapLimitInBytes, l.Unified, 128<<20)
		}
		if u := got["unlimited"]; u.MemorySwapLimitInBytes != 0 || u.Unified != nil {
			t.Errorf("%q: unlimited container: memory+swap %d, unified %v; want none", behavior, u.MemorySwapLimitInBytes, u.Unified)
		}
	}
	// No memsw controller (swapaccount=0): nothing is sent.
	if l := memoryOf(t, MemorySettings{}, pod)["limited"]; l.MemorySwapLimitInBytes != 0 {
		t.Errorf("without a swap controller: memory+swap %d, want 0", l.MemorySwapLimitInBytes)
	}
}

func TestOOMGroupAndSwapOnCgroupV2AsUpstream(t *testing.T) {
	v2 := MemorySettings{CgroupV2: true, OOMGroup: true, SwapController: true, MemoryCapacity: 8 << 30, SwapCapacity: 2 << 30}
	burstable := newPod("burstable",
		memCtr("swaps", "1Gi", "2Gi"),      // its request's share of the machine: 1/8 of the swap
		memCtr("equal", "1Gi", "1Gi"),      // request = limit: no swap
		memCtr("none", "", ""),             // asks no memory: no swap
		memCtr("huge", "9Gi", "10Gi"),      // asks more than the machine: no swap
		memCtr("requestonly", "512Mi", ""), // no limit: 1/16 of the swap
	)
	critical := burstable.DeepCopy()
	critical.UID, critical.Spec.Priority = "uid-critical", ptr.To[int32](2000000000)
	guaranteed := newPod("guaranteed", memCtr("g", "1Gi", "1Gi"))
	guaranteed.Spec.Containers[0].Resources.Requests["cpu"] = quantities("cpu", "1")["cpu"]
	guaranteed.Spec.Containers[0].Resources.Limits["cpu"] = quantities("cpu", "1")["cpu"]

	unified := func(swap string) map[string]string {
		return map[string]string{"memory.oom.group": "1", "memory.swap.max": swap}
	}
	tests := []struct {
		name     string
		settings MemorySettings
		pod      *v1.Pod
		want     map[string]map[string]string
	}{
		{"NoSwap (the default)", v2, burstable, map[string]map[string]string{
			"swaps": unified("0"), "equal": unified("0"), "none": unified("0"), "huge": unified("0"), "requestonly": unified("0")}},
		{"LimitedSwap", withSwap(v2, LimitedSwap), burstable, map[string]map[string]string{
			"swaps": unified("268435456"), "equal": unified("0"), "none": unified("0"), "huge": unified("0"), "requestonly": unified("134217728")}},
		{"LimitedSwap, critical pod", withSwap(v2, LimitedSwap), critical, map[string]map[string]string{
			"swaps": unified("0"), "equal": unified("0"), "none": unified("0"), "huge": unified("0"), "requestonly": unified("0")}},
		{"LimitedSwap, Guaranteed pod", withSwap(v2, LimitedSwap), guaranteed, map[string]map[string]string{"g": unified("0")}},
		{"singleProcessOOMKill, no swap controller", MemorySettings{CgroupV2: true}, guaranteed, map[string]map[string]string{"g": nil}},
		{"OOM group only", MemorySettings{CgroupV2: true, OOMGroup: true}, guaranteed, map[string]map[string]string{"g": {"memory.oom.group": "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := memoryOf(t, tt.settings, tt.pod)
			for name, want := range tt.want {
				if !reflect.DeepEqual(got[name].Unified, want) {
					t.Errorf("container %s: unified %v, want %v", name, got[name].Unified, want)
				}
				if got[name].MemorySwapLimitInBytes != 0 {
					t.Errorf("container %s: a v1 memory+swap limit on v2: %d", name, got[name].MemorySwapLimitInBytes)
				}
			}
		})
	}
}

func withSwap(s MemorySettings, behavior string) MemorySettings {
	s.SwapBehavior = behavior
	return s
}
