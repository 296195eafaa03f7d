package kuberuntime

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/downward"
)

const (
	minCPUShares   = 2
	sharesPerCPU   = 1024
	cpuQuotaPeriod = 100000 // µs
	minCPUQuota    = 1000   // µs, the kernel's floor

	oomScoreGuaranteed = -997
	oomScoreBestEffort = 1000
)

// request returns the container's request for name, defaulting to its limit as the API
// server does.
func request(c *v1.Container, name v1.ResourceName) (resource.Quantity, bool) {
	if q, ok := c.Resources.Requests[name]; ok {
		return q, true
	}
	q, ok := c.Resources.Limits[name]
	return q, ok
}

// qosClass computes the pod's QoS class: Guaranteed when every container has cpu and memory
// limits equal to its requests, BestEffort when nothing is set anywhere, else Burstable.
func qosClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	anySet, guaranteed := false, true
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				limit, hasLimit := c.Resources.Limits[name]
				req, hasReq := request(c, name)
				if hasReq && !req.IsZero() || hasLimit && !limit.IsZero() {
					anySet = true
				}
				if !hasLimit || !hasReq || req.Cmp(limit) != 0 {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !anySet:
		return v1.PodQOSBestEffort
	case guaranteed:
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

// oomScoreAdj ranks containers for the OOM killer by QoS: guaranteed last, best-effort first,
// burstable in between by how much of the machine's memory it asked for.
func oomScoreAdj(pod *v1.Pod, c *v1.Container, memCapacity int64) int64 {
	switch qosClass(pod) {
	case v1.PodQOSGuaranteed:
		return oomScoreGuaranteed
	case v1.PodQOSBestEffort:
		return oomScoreBestEffort
	}
	if memCapacity <= 0 {
		return 999
	}
	memRequest, _ := request(c, v1.ResourceMemory)
	score := 1000 - (1000*memRequest.Value())/memCapacity
	return max(2, min(score, 999))
}

// linuxResources maps requests and limits to cgroup settings: cpu shares from the request,
// cpu quota (unless cpuCFSQuota is off) and memory limit from the limits.
func linuxResources(pod *v1.Pod, c *v1.Container, capacity downward.Capacity, cfsQuota bool) *runtimeapi.LinuxContainerResources {
	res := &runtimeapi.LinuxContainerResources{CpuShares: minCPUShares}
	if cpuReq, ok := request(c, v1.ResourceCPU); ok {
		res.CpuShares = max(minCPUShares, cpuReq.MilliValue()*sharesPerCPU/1000)
	}
	cpuLimit, limited := c.Resources.Limits[v1.ResourceCPU]
	if cfsQuota && limited && !cpuLimit.IsZero() {
		res.CpuPeriod = cpuQuotaPeriod
		res.CpuQuota = max(minCPUQuota, cpuLimit.MilliValue()*cpuQuotaPeriod/1000)
	}
	if memLimit, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		res.MemoryLimitInBytes = memLimit.Value()
	}
	res.HugepageLimits = hugepageLimits(c)
	res.OomScoreAdj = oomScoreAdj(pod, c, capacity.MemoryBytes)
	return res
}
