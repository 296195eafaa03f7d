//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// resizePod patches container resources through the pods/resize subresource, as
// `kubectl patch pod --subresource resize` does.
func (c *cluster) resizePod(name string, resources map[string]v1.ResourceRequirements) {
	c.t.Helper()
	c.resizePodWithSidecars(name, resources, nil)
}

// resizePodWithSidecars also resizes sidecars (restartable init containers), as 1.33 allows.
// Containers are listed by name: the pods resized here list theirs in that order, and the API
// server refuses a resize patch that seems to reorder them.
func (c *cluster) resizePodWithSidecars(name string, resources, sidecars map[string]v1.ResourceRequirements) {
	c.t.Helper()
	list := func(m map[string]v1.ResourceRequirements) []map[string]any {
		var out []map[string]any
		for _, n := range slices.Sorted(maps.Keys(m)) {
			out = append(out, map[string]any{"name": n, "resources": m[n]})
		}
		return out
	}
	spec := map[string]any{"containers": list(resources)}
	if len(sidecars) > 0 {
		spec["initContainers"] = list(sidecars)
	}
	patch, _ := json.Marshal(map[string]any{"spec": spec})
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := c.admin.CoreV1().Pods(c.ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); err != nil {
		c.t.Fatalf("resize %s: %v", name, err)
	}
}

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// containerCgroup reads a file of a running container's cgroup (cgroup v1, cgroupfs driver).
func containerCgroup(t *testing.T, pod *v1.Pod, container, controller, file string) int64 {
	t.Helper()
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if cs.Name == container {
			id := strings.TrimPrefix(cs.ContainerID, "containerd://")
			return readInt(t, filepath.Join("/sys/fs/cgroup", controller, "kubepods/burstable", "pod"+string(pod.UID), id, file))
		}
	}
	t.Fatalf("no status for container %s", container)
	return 0
}

// containerStatus is the status of an app or init container (names are unique in a pod).
func containerStatus(pod *v1.Pod, name string) v1.ContainerStatus {
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	return v1.ContainerStatus{}
}

func podCondition(pod *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// waitPod waits until the API pod satisfies cond, which says what it saw.
func (c *cluster) waitPod(name, what string, timeout time.Duration, cond func(*v1.Pod) (bool, string)) *v1.Pod {
	c.t.Helper()
	var pod *v1.Pod
	testutil.WaitFor(c.t, timeout, what, func() (bool, string) {
		p, err := c.getPod(name)
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return cond(p)
	})
	return pod
}

// TestPodResizeInPlace resizes a running pod through the resize subresource: container "cpu"
// gets a higher CPU limit in place (no restart; new cpu.cfs_quota_us), container "mem" a higher
// memory limit under resizePolicy RestartContainer (restarted once with the new
// memory.limit_in_bytes), sidecar "proxy" a higher CPU limit in place; the pod cgroup counts
// all three. Then nodelet restarts: the resize is neither applied again nor
// undone, no container restarts and the status stays.
func TestPodResizeInPlace(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	p := podSpec("resize", "sleep 3600")
	p.Spec.Containers[0].Name = "cpu"
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("cpu", "200m", "memory", "64Mi")}
	mem := p.Spec.Containers[0]
	mem.Name = "mem"
	mem.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	p.Spec.Containers = append(p.Spec.Containers, mem)
	proxy := p.Spec.Containers[0]
	proxy.Name, proxy.RestartPolicy = "proxy", ptr.To(v1.ContainerRestartPolicyAlways)
	p.Spec.InitContainers = []v1.Container{proxy}
	c.createPod(p)
	pod := c.waitPodPhase("resize", v1.PodRunning, 60*time.Second)
	if got := containerCgroup(t, pod, "cpu", "cpu", "cpu.cfs_quota_us"); got != 20000 {
		t.Fatalf("cpu.cfs_quota_us before the resize: %d, want 20000", got)
	}
	cpuID, proxyID := containerStatus(pod, "cpu").ContainerID, containerStatus(pod, "proxy").ContainerID

	c.resizePodWithSidecars("resize", map[string]v1.ResourceRequirements{
		"cpu": {Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("cpu", "400m", "memory", "64Mi")},
		"mem": {Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("cpu", "200m", "memory", "96Mi")},
	}, map[string]v1.ResourceRequirements{
		"proxy": {Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("cpu", "300m", "memory", "64Mi")},
	})
	pod = c.waitPod("resize", "resize applied", 30*time.Second, func(p *v1.Pod) (bool, string) {
		cpu, m, px := containerStatus(p, "cpu"), containerStatus(p, "mem"), containerStatus(p, "proxy")
		done := cpu.Resources != nil && cpu.Resources.Limits.Cpu().String() == "400m" &&
			m.Resources != nil && m.Resources.Limits.Memory().String() == "96Mi" && m.State.Running != nil &&
			px.Resources != nil && px.Resources.Limits.Cpu().String() == "300m" &&
			podCondition(p, v1.PodResizeInProgress) == nil && podCondition(p, v1.PodResizePending) == nil
		return done, fmt.Sprintf("cpu %v, mem %v restarts %d, proxy %v, conditions %v", cpu.Resources, m.Resources, m.RestartCount, px.Resources, p.Status.Conditions)
	})
	cpu, m, px := containerStatus(pod, "cpu"), containerStatus(pod, "mem"), containerStatus(pod, "proxy")
	if cpu.RestartCount != 0 || cpu.ContainerID != cpuID {
		t.Errorf("the cpu container was restarted (restartCount %d, %s → %s)", cpu.RestartCount, cpuID, cpu.ContainerID)
	}
	if px.RestartCount != 0 || px.ContainerID != proxyID || px.AllocatedResources.Cpu().String() != "100m" {
		t.Errorf("sidecar: restartCount %d, %s → %s, allocatedResources %v; want it resized in place", px.RestartCount, proxyID, px.ContainerID, px.AllocatedResources)
	}
	if got := containerCgroup(t, pod, "proxy", "cpu", "cpu.cfs_quota_us"); got != 30000 {
		t.Errorf("sidecar cpu.cfs_quota_us after the resize: %d, want 30000", got)
	}
	if got := cpu.AllocatedResources.Cpu().String(); got != "100m" {
		t.Errorf("cpu allocatedResources cpu %s, want the 100m request", got)
	}
	if got := containerCgroup(t, pod, "cpu", "cpu", "cpu.cfs_quota_us"); got != 40000 {
		t.Errorf("cpu.cfs_quota_us after the resize: %d, want 40000", got)
	}
	if m.RestartCount != 1 {
		t.Errorf("mem restartCount %d, want 1 (RestartContainer)", m.RestartCount)
	}
	if got := containerCgroup(t, pod, "mem", "memory", "memory.limit_in_bytes"); got != 96<<20 {
		t.Errorf("mem memory.limit_in_bytes %d, want %d", got, 96<<20)
	}
	podQuota := readInt(t, fmt.Sprintf("/sys/fs/cgroup/cpu/kubepods/burstable/pod%s/cpu.cfs_quota_us", pod.UID))
	podMem := readInt(t, fmt.Sprintf("/sys/fs/cgroup/memory/kubepods/burstable/pod%s/memory.limit_in_bytes", pod.UID))
	if podQuota != 90000 || podMem != 224<<20 { // cpu 400m + 200m + 300m, memory 64Mi + 96Mi + 64Mi
		t.Errorf("pod cgroup quota %d memory %d, want 90000 and %d", podQuota, podMem, 224<<20)
	}
	if pod.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("QoS class %s", pod.Status.QOSClass)
	}
	if data, err := os.ReadFile(filepath.Join(c.rootDir, "allocated_pods_state")); err != nil || !strings.Contains(string(data), string(pod.UID)) {
		t.Errorf("allocation checkpoint does not hold the pod: %v %s", err, data)
	}

	// A nodelet restart neither applies the resize again nor forgets it.
	before := pod
	c.stop(syscall.SIGTERM)
	logBefore := len(c.log())
	if !strings.Contains(c.log(), "Resized container in place") {
		t.Error("nodelet did not log the in-place resize (the restart check below looks for it)")
	}
	c.start()
	c.waitReady(t)
	time.Sleep(3 * time.Second) // a few sync rounds of the restarted nodelet
	pod = c.waitPodPhase("resize", v1.PodRunning, 30*time.Second)
	for _, name := range []string{"cpu", "mem", "proxy"} {
		was, now := containerStatus(before, name), containerStatus(pod, name)
		if now.ContainerID != was.ContainerID || now.RestartCount != was.RestartCount {
			t.Errorf("%s changed across the restart: %s/%d → %s/%d", name, was.ContainerID, was.RestartCount, now.ContainerID, now.RestartCount)
		}
		if !equalResources(was.Resources, now.Resources) || !now.AllocatedResources.Cpu().Equal(*was.AllocatedResources.Cpu()) {
			t.Errorf("%s status resources changed across the restart: %v → %v", name, was.Resources, now.Resources)
		}
	}
	if got := containerCgroup(t, pod, "cpu", "cpu", "cpu.cfs_quota_us"); got != 40000 {
		t.Errorf("cpu.cfs_quota_us after the restart: %d", got)
	}
	if podCondition(pod, v1.PodResizeInProgress) != nil || podCondition(pod, v1.PodResizePending) != nil {
		t.Errorf("resize conditions after the restart: %v", pod.Status.Conditions)
	}
	for _, line := range []string{"Pod resize allocated", "Resized container in place"} {
		if strings.Contains(c.log()[logBefore:], line) {
			t.Errorf("the restarted nodelet logged %q: the resize was applied again", line)
		}
	}
}

func equalResources(a, b *v1.ResourceRequirements) bool {
	if a == nil || b == nil {
		return a == b
	}
	for _, pair := range [][2]v1.ResourceList{{a.Limits, b.Limits}, {a.Requests, b.Requests}} {
		if len(pair[0]) != len(pair[1]) {
			return false
		}
		for name, q := range pair[0] {
			if other, ok := pair[1][name]; !ok || !q.Equal(other) {
				return false
			}
		}
	}
	return true
}

// TestPodResizePendingUntilRoom: a resize beyond the node's allocatable is Infeasible; one that
// does not fit beside another pod now is Deferred, and is applied once that pod is deleted.
func TestPodResizePendingUntilRoom(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	alloc := c.node().Status.Allocatable.Cpu().MilliValue()
	filler := podSpec("filler", "sleep 3600")
	filler.Spec.Containers[0].Resources.Requests = rl("cpu", fmt.Sprintf("%dm", alloc-300))
	c.createPod(filler)
	grow := podSpec("grow", "sleep 3600")
	grow.Spec.Containers[0].Resources.Requests = rl("cpu", "100m")
	c.createPod(grow)
	c.waitPodPhase("filler", v1.PodRunning, 60*time.Second)
	c.waitPodPhase("grow", v1.PodRunning, 60*time.Second)

	c.resizePod("grow", map[string]v1.ResourceRequirements{"main": {Requests: rl("cpu", "1000")}})
	want := fmt.Sprintf("Node didn't have enough capacity: cpu, requested: 1000000, capacity: %d", alloc)
	c.waitPod("grow", "Infeasible", 20*time.Second, func(p *v1.Pod) (bool, string) {
		cond := podCondition(p, v1.PodResizePending)
		return cond != nil && cond.Reason == v1.PodReasonInfeasible && cond.Message == want, fmt.Sprint(p.Status.Conditions)
	})

	c.resizePod("grow", map[string]v1.ResourceRequirements{"main": {Requests: rl("cpu", "500m")}})
	pod := c.waitPod("grow", "Deferred", 20*time.Second, func(p *v1.Pod) (bool, string) {
		cond := podCondition(p, v1.PodResizePending)
		return cond != nil && cond.Reason == v1.PodReasonDeferred &&
			strings.HasPrefix(cond.Message, "Node didn't have enough resource: cpu, requested: 500, used: "), fmt.Sprint(p.Status.Conditions)
	})
	if cs := containerStatus(pod, "main"); cs.AllocatedResources.Cpu().String() != "100m" {
		got := cs.AllocatedResources.Cpu().String()
		t.Errorf("allocatedResources cpu %s while deferred, want the old 100m", got)
	}

	ctx, cancel := criCtx()
	defer cancel()
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, "filler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = c.waitPod("grow", "resize applied after the filler left", 30*time.Second, func(p *v1.Pod) (bool, string) {
		cs := containerStatus(p, "main")
		// Allocated first, then applied: status.resources shows what is in effect.
		applied := cs.Resources != nil && cs.Resources.Requests.Cpu().String() == "500m"
		return podCondition(p, v1.PodResizePending) == nil && podCondition(p, v1.PodResizeInProgress) == nil &&
				cs.AllocatedResources.Cpu().String() == "500m" && applied,
			fmt.Sprintf("allocated %v, resources %v, conditions %v", cs.AllocatedResources, cs.Resources, p.Status.Conditions)
	})
	if got := containerCgroup(t, pod, "main", "cpu", "cpu.shares"); got != 512 {
		t.Errorf("cpu.shares %d, want 512 for the 500m request", got)
	}
	if cs := containerStatus(pod, "main"); cs.RestartCount != 0 {
		t.Errorf("restartCount %d", cs.RestartCount)
	}
}
