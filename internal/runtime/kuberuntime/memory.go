package kuberuntime

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// The memorySwap.swapBehavior values.
const (
	NoSwap      = "NoSwap"
	LimitedSwap = "LimitedSwap"
)

// The cgroup v2 files upstream sets through CRI's unified resources.
const (
	unifiedOOMGroup = "memory.oom.group"
	unifiedSwapMax  = "memory.swap.max"
)

// MemorySettings are the host facts and settings that shape containers' memory beyond their
// limit, as upstream: whether an OOM kills the whole container and how far it may swap.
type MemorySettings struct {
	// CgroupV2: the host runs the unified hierarchy.
	CgroupV2 bool
	// OOMGroup asks the kernel to kill every process of a container (and sandbox) on an OOM
	// (memory.oom.group=1): cgroup v2 without singleProcessOOMKill.
	OOMGroup bool
	// SwapController: the host can limit swap (v1: memory.memsw.limit_in_bytes at the root
	// memory cgroup; v2: memory.swap.max in nodelet's own cgroup). Without it no swap limit
	// is sent, as upstream.
	SwapController bool
	// SwapBehavior is memorySwap.swapBehavior: "" and NoSwap keep containers off swap,
	// LimitedSwap lets Burstable ones swap in proportion to their memory request (v2 only).
	SwapBehavior string
	// MemoryCapacity and SwapCapacity are the machine's MemTotal and SwapTotal in bytes.
	MemoryCapacity, SwapCapacity int64
}

// containerResources are the cgroup settings of one container: its requests and limits,
// then the OOM group and swap limit as upstream adds them, then what the resources hooks
// change (the CPU manager lifts the quota of exclusive CPUs).
func (m *Manager) containerResources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	res := linuxResources(pod, c, m.capacity, !m.noCPUQuota)
	m.setOOMGroup(res)
	m.setSwap(res, pod, c)
	m.hooks.ApplyResources(pod, c, res)
	return res
}

// setOOMGroup makes an OOM kill every process in the cgroup, not just the largest.
func (m *Manager) setOOMGroup(res *runtimeapi.LinuxContainerResources) {
	if m.memory.CgroupV2 && m.memory.OOMGroup {
		res.Unified = map[string]string{unifiedOOMGroup: "1"}
	}
}

// setSwap limits the container's swap as memorySwap.swapBehavior says. On cgroup v1 only
// NoSwap exists: memory+swap capped at the memory limit (no cap when there is no limit).
func (m *Manager) setSwap(res *runtimeapi.LinuxContainerResources, pod *v1.Pod, c *v1.Container) {
	s := m.memory
	if !s.SwapController {
		return
	}
	if !s.CgroupV2 {
		res.MemorySwapLimitInBytes = res.MemoryLimitInBytes
		return
	}
	swap := int64(0)
	if limited, ok := limitedSwap(s, pod, c); ok {
		swap = limited
	}
	if res.Unified == nil {
		res.Unified = map[string]string{}
	}
	res.Unified[unifiedSwapMax] = strconv.FormatInt(swap, 10)
}

// limitedSwap is the container's share of the machine's swap under LimitedSwap: its memory
// request's share of the machine's memory. ok is false where upstream keeps the container
// off swap: other behaviors, critical pods, non-Burstable pods, containers asking no memory
// or as much as their limit, and a request above the machine's memory.
func limitedSwap(s MemorySettings, pod *v1.Pod, c *v1.Container) (int64, bool) {
	if s.SwapBehavior != LimitedSwap || podutil.IsCritical(pod) || qosClass(pod) != v1.PodQOSBurstable {
		return 0, false
	}
	req := c.Resources.Requests[v1.ResourceMemory]
	limit := c.Resources.Limits[v1.ResourceMemory]
	if req.IsZero() && limit.IsZero() || req.Cmp(limit) == 0 {
		return 0, false
	}
	if s.MemoryCapacity <= 0 || req.Value() > s.MemoryCapacity {
		return 0, false
	}
	return int64(float64(req.Value()) / float64(s.MemoryCapacity) * float64(s.SwapCapacity)), true
}
