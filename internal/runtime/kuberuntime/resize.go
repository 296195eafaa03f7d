package kuberuntime

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// ActuatedResources records what was set on each container (allocation.Manager): at its
// creation and at every in-place resize, so a restart knows what is in effect.
type ActuatedResources interface {
	Actuated(uid types.UID, container string) (v1.ResourceRequirements, bool)
	SetActuated(uid types.UID, container string, r v1.ResourceRequirements) error
}

// PodCgroupConfig is a pod cgroup's cpu weight (v1 shares), cpu quota (µs per 100ms) and
// memory limit (bytes); -1 is no limit and, when setting, zero leaves a field as it is.
type PodCgroupConfig struct {
	CPUShares int64
	CPUQuota  int64
	Memory    int64
}

// PodCgroups resizes a running pod's cgroup (internal/cm).
type PodCgroups interface {
	// PodConfig returns the cgroup's current settings and those the pod asks for.
	PodConfig(pod *v1.Pod) (current, desired PodCgroupConfig, err error)
	SetPodConfig(pod *v1.Pod, c PodCgroupConfig) error
	PodMemoryUsage(pod *v1.Pod) (int64, error)
}

// hashMatches says whether running container st was created from c. Its hash is upstream's
// (kubehash.ContainerHash: name and image, so an in-place resize or any other change the API
// allows keeps it), whoever made it; a container an older nodelet made carries that
// nodelet's hash instead: of the spec without resources or, older still, of the whole spec.
func hashMatches(st *container.ContainerStatus, c *v1.Container) bool {
	if st.LegacyHash {
		return st.Hash == legacyHash(c) || st.Hash == hashJSON(c)
	}
	return st.Hash == kubehash.ContainerHash(c)
}

// legacyHash is the hash nodelet wrote before it wrote upstream's: the spec without resources.
func legacyHash(c *v1.Container) uint64 {
	spec := *c
	spec.Resources = v1.ResourceRequirements{}
	return hashJSON(&spec)
}

func hashJSON(c *v1.Container) uint64 {
	data, _ := json.Marshal(c) // a v1.Container always marshals
	h := fnv.New64a()
	h.Write(data)
	return h.Sum64()
}

// resizeAmounts are the cpu and memory figures a resize compares, as upstream compares them.
type resizeAmounts struct {
	cpuLimit, cpuRequest, memLimit, memRequest int64
}

func amountsOf(r *v1.ResourceRequirements) resizeAmounts {
	return resizeAmounts{
		cpuLimit: r.Limits.Cpu().MilliValue(), cpuRequest: r.Requests.Cpu().MilliValue(),
		memLimit: r.Limits.Memory().Value(), memRequest: r.Requests.Memory().Value(),
	}
}

// containerUpdate is a running container whose resources change in place.
type containerUpdate struct {
	spec     *v1.Container // with the allocated resources
	id       string
	actuated v1.ResourceRequirements // what is in effect; updated as each resource is set
}

// resizePlan is what a resize asks of SyncPod besides kills and starts.
type resizePlan struct {
	update []*containerUpdate
	// restart: some container restarts for its resize, so the pod cgroup follows too.
	restart bool
}

func (p resizePlan) empty() bool { return len(p.update) == 0 && !p.restart }

// computeResize compares each running resizable container (app containers and sidecars)
// with what is in effect: per the container's resizePolicy it is restarted (added to a's kills
// and starts) or updated in place (returned).
func (m *Manager) computeResize(pod *v1.Pod, status *container.PodStatus, a *podActions) resizePlan {
	var plan resizePlan
	if m.actuated == nil || a.sandbox == nil {
		return plan
	}
	killed := map[string]bool{}
	for _, k := range a.kill {
		killed[k.status.ID] = true
	}
	visit := func(c *v1.Container) {
		st := status.FindContainer(c.Name)
		if st == nil || st.State != container.StateRunning || st.SandboxID != a.sandbox.ID || killed[st.ID] {
			return
		}
		actuated, found := m.actuated.Actuated(pod.UID, c.Name)
		if !found {
			// Made before nodelet recorded it: it runs with what it was created with, which
			// its hash says is the allocated spec.
			klog.InfoS("No actuated resources recorded for a running container; taking the allocated ones", "pod", klog.KObj(pod), "container", c.Name)
			if err := m.actuated.SetActuated(pod.UID, c.Name, c.Resources); err != nil {
				klog.ErrorS(err, "Could not record actuated resources", "pod", klog.KObj(pod), "container", c.Name)
			}
			return
		}
		want, have := amountsOf(&c.Resources), amountsOf(&actuated)
		if want == have {
			return
		}
		if restartsFor(c, want, have) {
			a.kill = append(a.kill, containerKill{st, fmt.Sprintf("Container %s resize requires restart", c.Name)})
			a.start = append(a.start, containerStart{spec: c, prev: st, restartCount: nextRestartCount(status.Containers, c.Name)})
			plan.restart = true
			return
		}
		plan.update = append(plan.update, &containerUpdate{spec: c, id: st.ID, actuated: actuated})
	}
	for _, c := range sidecar.LongRunning(pod) {
		visit(c)
	}
	return plan
}

// restartsFor says whether a changed resource's resizePolicy is RestartContainer. Without a
// policy a resource is resized in place (NotRequired).
func restartsFor(c *v1.Container, want, have resizeAmounts) bool {
	changed := map[v1.ResourceName]bool{
		v1.ResourceCPU:    want.cpuLimit != have.cpuLimit || want.cpuRequest != have.cpuRequest,
		v1.ResourceMemory: want.memLimit != have.memLimit || want.memRequest != have.memRequest,
	}
	for _, p := range c.ResizePolicy {
		if changed[p.ResourceName] && p.RestartPolicy == v1.RestartContainer {
			return true
		}
	}
	return false
}

// resizeFromCRI converts what the runtime reports as in effect, as upstream reads it.
func resizeFromCRI(r *runtimeapi.ContainerResources) *container.ContainerResources {
	l := r.GetLinux()
	if l == nil {
		return nil
	}
	out := &container.ContainerResources{}
	if l.CpuPeriod > 0 && l.CpuQuota > 0 {
		out.CPULimit = resource.NewMilliQuantity(l.CpuQuota*1000/l.CpuPeriod, resource.DecimalSI)
	}
	if l.CpuShares >= minCPUShares {
		milli := int64(math.Ceil(float64(l.CpuShares*1000) / sharesPerCPU))
		out.CPURequest = resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
	if l.MemoryLimitInBytes > 0 {
		out.MemoryLimit = resource.NewQuantity(l.MemoryLimitInBytes, resource.BinarySI)
	}
	if out.CPULimit == nil && out.CPURequest == nil && out.MemoryLimit == nil {
		return nil
	}
	return out
}

// recordActuated notes the resources a container is about to be created with.
func (m *Manager) recordActuated(pod *v1.Pod, c *v1.Container) error {
	if m.actuated == nil {
		return nil
	}
	if err := m.actuated.SetActuated(pod.UID, c.Name, c.Resources); err != nil {
		return fmt.Errorf("recording the container's resources: %w", err)
	}
	return nil
}
