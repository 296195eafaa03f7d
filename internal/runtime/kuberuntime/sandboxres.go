package kuberuntime

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

const maxCPUShares = 262144

// setSandboxResources gives the runtime the pod's totals and its RuntimeClass overhead at
// RunPodSandbox, as upstream does: VM runtimes size the guest by them, and containerd hands
// them on to the pause container's spec as annotations.
func (m *Manager) setSandboxResources(pod *v1.Pod, cfg *runtimeapi.LinuxPodSandboxConfig) {
	cfg.Resources = m.podTotals(pod)
	cfg.Overhead = &runtimeapi.LinuxContainerResources{}
	if pod.Spec.Overhead != nil {
		// Overhead has no requests and limits of its own: it counts as both.
		cpu, mem := pod.Spec.Overhead[v1.ResourceCPU], pod.Spec.Overhead[v1.ResourceMemory]
		cfg.Overhead = m.calculateResources(&cpu, cpu, mem)
	}
}

// podTotals are the pod's containers' CPU request and CPU and memory limits, overhead left
// out: what runs at once at most (sidecar.Fold), a container without a limit adding nothing.
func (m *Manager) podTotals(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	requests := sidecar.Fold(pod, func(c *v1.Container) v1.ResourceList {
		if q, ok := request(c, v1.ResourceCPU); ok {
			return v1.ResourceList{v1.ResourceCPU: q}
		}
		return nil
	})
	limits := sidecar.Fold(pod, func(c *v1.Container) v1.ResourceList {
		out := v1.ResourceList{}
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := c.Resources.Limits[name]; ok {
				out[name] = q
			}
		}
		return out
	})
	var cpuRequest *resource.Quantity
	if q, ok := requests[v1.ResourceCPU]; ok {
		cpuRequest = &q
	}
	return m.calculateResources(cpuRequest, limits[v1.ResourceCPU], limits[v1.ResourceMemory])
}

// calculateResources turns a CPU request (nil: none, the limit stands in), CPU limit and
// memory limit into cgroup settings the way upstream does for sandboxes: the CFS period is
// always set when quotas are enforced, with quota 0 (none) for no limit.
func (m *Manager) calculateResources(cpuRequest *resource.Quantity, cpuLimit, memLimit resource.Quantity) *runtimeapi.LinuxContainerResources {
	res := &runtimeapi.LinuxContainerResources{}
	milli := cpuLimit.MilliValue()
	if cpuRequest != nil {
		milli = cpuRequest.MilliValue()
	}
	res.CpuShares = min(maxCPUShares, max(minCPUShares, milli*sharesPerCPU/1000))
	res.MemoryLimitInBytes = memLimit.Value()
	if !m.noCPUQuota {
		res.CpuPeriod = cpuQuotaPeriod
		if limit := cpuLimit.MilliValue(); limit != 0 {
			res.CpuQuota = max(minCPUQuota, limit*cpuQuotaPeriod/1000)
		}
	}
	m.setOOMGroup(res)
	return res
}
