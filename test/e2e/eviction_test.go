//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// memoryAvailable is the node's memory.available as the eviction manager computes it:
// capacity minus the root memory cgroup's working set (usage − inactive_file).
func memoryAvailable(t *testing.T) int64 {
	t.Helper()
	capacity := readMeminfoKB(t, "MemTotal") * 1024
	usage := readInt(t, "/sys/fs/cgroup/memory/memory.usage_in_bytes")
	inactive := int64(0)
	b, err := os.ReadFile("/sys/fs/cgroup/memory/memory.stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "total_inactive_file" {
			inactive, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return capacity - (usage - inactive)
}

func readMeminfoKB(t *testing.T, key string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key+":" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	t.Fatalf("no %s in /proc/meminfo", key)
	return 0
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// metricsText fetches /metrics from nodelet's read-only port.
func metricsText(t *testing.T, port int, path string) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func nodeCondition(n *v1.Node, typ v1.NodeConditionType) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// TestMemoryPressureEvictsBestEffortPod fills a BestEffort pod's memory-backed emptyDir (charged
// to the pod's memory cgroup) past a memory.available threshold set 1.5 GiB below what is
// free now. The BestEffort pod is evicted (phase Failed, reason Evicted, upstream's message),
// the Guaranteed pod keeps running, MemoryPressure goes True and, once the memory is given back
// and the transition period has passed, back to False. With kernelMemcgNotification the kernel
// signals the crossing.
func TestMemoryPressureEvictsBestEffortPod(t *testing.T) {
	available := memoryAvailable(t)
	threshold := (available - 1536<<20) >> 20 // MiB
	roPort := freePort(t)
	c := joinCluster(t, fmt.Sprintf("--eviction-hard=memory.available<%dMi", threshold),
		"--eviction-pressure-transition-period=30s", fmt.Sprintf("--read-only-port=%d", roPort),
		"--kernel-memcg-notification")
	t.Logf("memory.available now %d MiB; threshold %d MiB", available>>20, threshold)

	guaranteed := podSpec("guaranteed", "sleep 3600")
	guaranteed.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	c.createPod(guaranteed)
	c.waitPodPhase("guaranteed", v1.PodRunning, 60*time.Second)

	hog := podSpec("hog", "dd if=/dev/zero of=/fill/data bs=1M count=3072 && sleep 3600")
	hog.Spec.Volumes = []v1.Volume{{Name: "fill", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}}
	hog.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "fill", MountPath: "/fill"}}
	c.createPod(hog)

	sawPressure := false
	testutil.WaitFor(t, 3*time.Minute, "hog evicted", func() (bool, string) {
		if nodeCondition(c.node(), v1.NodeMemoryPressure) == v1.ConditionTrue {
			sawPressure = true
		}
		p, err := c.getPod("hog")
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodFailed, string(p.Status.Phase) + " " + p.Status.Reason
	})
	p, _ := c.getPod("hog")
	if p.Status.Reason != "Evicted" || !strings.Contains(p.Status.Message, "The node was low on resource: memory.") {
		t.Fatalf("hog status: reason %q message %q; want Evicted and the low-on-memory message", p.Status.Reason, p.Status.Message)
	}
	testutil.WaitFor(t, 30*time.Second, "MemoryPressure True on the node", func() (bool, string) {
		sawPressure = sawPressure || nodeCondition(c.node(), v1.NodeMemoryPressure) == v1.ConditionTrue
		return sawPressure, "not seen"
	})
	if g, _ := c.getPod("guaranteed"); g.Status.Phase != v1.PodRunning {
		t.Fatalf("guaranteed pod is %s (%s), want Running", g.Status.Phase, g.Status.Reason)
	}
	// As upstream: the event names the starved resource and the container over its request,
	// and the pod carries a DisruptionTarget condition.
	ev := c.waitForEvent("hog", "Evicted")
	if a := ev.Annotations; a["starved_resource"] != "memory" || a["offending_containers"] != "main" || a["offending_containers_usage"] == "" {
		t.Errorf("Evicted event annotations %v, want starved_resource=memory, offending_containers=main and its usage", a)
	}
	if !hasPodCondition(p, v1.DisruptionTarget) {
		t.Errorf("evicted pod's conditions %v lack DisruptionTarget", p.Status.Conditions)
	}
	// kernelMemcgNotification: the threshold (and its allocatable copy) registered with the
	// kernel, which signalled the crossing.
	nodeletLog := c.log()
	for _, want := range []string{"memoryThresholdNotifiers=2", "the kernel reports a memory threshold crossed"} {
		if !strings.Contains(nodeletLog, want) {
			t.Errorf("nodelet's log lacks %q", want)
		}
	}
	if strings.Contains(nodeletLog, "cannot register a memory threshold") {
		t.Errorf("a memory threshold was not registered:\n%s", grepLines(nodeletLog, "memory threshold"))
	}
	if m := metricsText(t, roPort, "/metrics"); !strings.Contains(m, `kubelet_evictions{eviction_signal="memory.available"} 1`) {
		t.Errorf("kubelet_evictions not counted:\n%s", grepLines(m, "kubelet_evictions"))
	}
	testutil.WaitFor(t, 2*time.Minute, "MemoryPressure back to False", func() (bool, string) {
		s := nodeCondition(c.node(), v1.NodeMemoryPressure)
		return s == v1.ConditionFalse, string(s)
	})
	if g, _ := c.getPod("guaranteed"); g.Status.Phase != v1.PodRunning {
		t.Fatalf("guaranteed pod is %s (%s) after the pressure, want Running", g.Status.Phase, g.Status.Reason)
	}
}

// TestEmptyDirOverSizeLimitEvicted writes past an emptyDir's sizeLimit: the pod is evicted
// whatever the node's state, with upstream's message naming the volume and the limit.
func TestEmptyDirOverSizeLimitEvicted(t *testing.T) {
	c := joinCluster(t)
	limit := resource.MustParse("1Mi")
	p := podSpec("scratch", "dd if=/dev/zero of=/scratch/data bs=1M count=4 && sleep 3600")
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	c.createPod(p)
	got := c.waitPodPhase("scratch", v1.PodFailed, 3*time.Minute)
	want := `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi".`
	if got.Status.Reason != "Evicted" || !strings.Contains(got.Status.Message, want) {
		t.Fatalf("status: reason %q message %q; want Evicted with %q", got.Status.Reason, got.Status.Message, want)
	}
	c.waitForEvent("scratch", "Evicted")
	if hasPodCondition(got, v1.DisruptionTarget) {
		t.Errorf("a pod evicted for its own limit got a DisruptionTarget condition (upstream gives none): %v", got.Status.Conditions)
	}
}

func hasPodCondition(p *v1.Pod, typ v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// waitForEvent waits for an event with reason on the named pod of the test namespace.
func (c *cluster) waitForEvent(pod, reason string) v1.Event {
	c.t.Helper()
	var found v1.Event
	testutil.WaitFor(c.t, 30*time.Second, reason+" event on "+pod, func() (bool, string) {
		ctx, cancel := criCtx()
		defer cancel()
		list, err := c.admin.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Reason == reason {
				found = e
				return true, ""
			}
			seen = append(seen, e.Reason)
		}
		return false, strings.Join(seen, ",")
	})
	return found
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
