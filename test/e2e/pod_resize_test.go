//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// resizePod patches container resources through the pods/resize subresource, as
// `kubectl patch pod --subresource resize` does.
func (c *cluster) resizePod(name string, resources map[string]v1.ResourceRequirements) {
	c.t.Helper()
	var containers []map[string]any
	for n, r := range resources {
		containers = append(containers, map[string]any{"name": n, "resources": r})
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"containers": containers}})
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
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			id := strings.TrimPrefix(cs.ContainerID, "containerd://")
			return readInt(t, filepath.Join("/sys/fs/cgroup", controller, "kubepods/burstable", "pod"+string(pod.UID), id, file))
		}
	}
	t.Fatalf("no status for container %s", container)
	return 0
}

func containerStatus(pod *v1.Pod, name string) v1.ContainerStatus {
	for _, cs := range pod.Status.ContainerStatuses {
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
	waitFor(c.t, timeout, what, func() (bool, string) {
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
// memory.limit_in_bytes). Then nodelet restarts: the resize is neither applied again nor
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
	c.createPod(p)
	pod := c.waitPodPhase("resize", v1.PodRunning, 60*time.Second)
	if got := containerCgroup(t, pod, "cpu", "cpu", "cpu.cfs_quota_us"); got != 20000 {
		t.Fatalf("cpu.cfs_quota_us before the resize: %d, want 20000", got)
	}
	cpuID := containerStatus(pod, "cpu").ContainerID

	c.resizePod("resize", map[string]v1.ResourceRequirements{
		"cpu": {Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("cpu", "400m", "memory", "64Mi")},
		"mem": {Requests: rl("cpu", "100m", "memory", "32Mi"), Limits: rl("cpu", "200m", "memory", "96Mi")},
	})
	pod = c.waitPod("resize", "resize applied", 30*time.Second, func(p *v1.Pod) (bool, string) {
		cpu, m := containerStatus(p, "cpu"), containerStatus(p, "mem")
		done := cpu.Resources != nil && cpu.Resources.Limits.Cpu().String() == "400m" &&
			m.Resources != nil && m.Resources.Limits.Memory().String() == "96Mi" && m.State.Running != nil &&
			podCondition(p, v1.PodResizeInProgress) == nil && podCondition(p, v1.PodResizePending) == nil
		return done, fmt.Sprintf("cpu %v, mem %v restarts %d, conditions %v", cpu.Resources, m.Resources, m.RestartCount, p.Status.Conditions)
	})
	cpu, m := containerStatus(pod, "cpu"), containerStatus(pod, "mem")
	if cpu.RestartCount != 0 || cpu.ContainerID != cpuID {
		t.Errorf("the cpu container was restarted (restartCount %d, %s → %s)", cpu.RestartCount, cpuID, cpu.ContainerID)
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
	if podQuota != 60000 || podMem != 160<<20 {
		t.Errorf("pod cgroup quota %d memory %d, want 60000 and %d", podQuota, podMem, 160<<20)
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
	for _, name := range []string{"cpu", "mem"} {
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
		return podCondition(p, v1.PodResizePending) == nil && cs.AllocatedResources.Cpu().String() == "500m",
			fmt.Sprintf("allocated %v, conditions %v", cs.AllocatedResources, p.Status.Conditions)
	})
	if got := containerCgroup(t, pod, "main", "cpu", "cpu.shares"); got != 512 {
		t.Errorf("cpu.shares %d, want 512 for the 500m request", got)
	}
	if cs := containerStatus(pod, "main"); cs.RestartCount != 0 {
		t.Errorf("restartCount %d", cs.RestartCount)
	}
}
