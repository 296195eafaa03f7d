//go:build guestvm

package inguest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestEvictionUnderMemoryPressure joins the kubelet to a control plane in the guest and
// runs two API pods: a Guaranteed one and a BestEffort one that holds 1000Mi of anonymous
// memory (dd's buffer, kept while it blocks on a pipe nobody reads). The hard threshold is
// memory.available 600Mi below what is available before, so the hog alone crosses it, as
// read from the guest's real cgroup v2 figures. The eviction manager evicts the hog, with
// upstream's reason and message on its status and MemoryPressure on the node, and the
// Guaranteed pod runs on, never restarted.
func TestEvictionUnderMemoryPressure(t *testing.T) {
	useDriver(t, "systemd")
	cs, kubeconfig := startControlPlane(t)
	available := memoryAvailable(t)
	threshold := (available - 600<<20) >> 20
	t.Logf("memory.available now %d MiB; threshold %d MiB", available>>20, threshold)
	joinKubelet(t, cs, kubeconfig, fmt.Sprintf("cgroupDriver: systemd\nevictionHard: {memory.available: %dMi}\n"+
		"evictionPressureTransitionPeriod: 60s\n", threshold), "hog", "keeper")
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")

	keeper := apiPod("keeper", "sleep 3600", v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")})
	if _, err := pods.Create(ctx, keeper, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, cs, "keeper", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	start := time.Now()
	hog := apiPod("hog", "dd if=/dev/zero bs=1000M count=1 | sleep 3600", nil)
	if _, err := pods.Create(ctx, hog, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitAPIPod(t, cs, "hog", "evicted", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	t.Logf("the hog failed %v after its creation: %s: %s", time.Since(start).Round(time.Second), got.Status.Reason, got.Status.Message)
	if got.Status.Reason != "Evicted" || !strings.HasPrefix(got.Status.Message, "The node was low on resource: memory. Threshold quantity: ") {
		t.Errorf("the hog's status: reason %q, message %q; want Evicted, \"The node was low on resource: memory. Threshold quantity: ...\"",
			got.Status.Reason, got.Status.Message)
	}
	// The hog's usage in the message is its container's working set, as read from its cgroup
	// v2 files (memory.current less memory.stat's inactive_file): at least the 600Mi that
	// crossed the threshold (dd may still be filling its buffer when the kubelet looks).
	if used, ok := usageInMessage(got.Status.Message); !ok || used < 512<<20 {
		t.Errorf("the eviction message gives the hog's usage as %d bytes (found: %v); want at least 512Mi", used, ok)
	}
	// The node's status catches up at its next update (every 10s); the pressure transition
	// period keeps the condition True although the eviction freed the memory.
	testutil.WaitFor(t, time.Minute, "the node's MemoryPressure condition True", func() (bool, string) {
		time.Sleep(time.Second)
		node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := nodeCondition(node, v1.NodeMemoryPressure)
		return c != nil && c.Status == v1.ConditionTrue, fmt.Sprintf("%+v", c)
	})
	k, err := pods.Get(ctx, "keeper", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := k.Status.ContainerStatuses; k.Status.Phase != v1.PodRunning || len(cs) == 0 || cs[0].State.Running == nil || cs[0].RestartCount != 0 {
		t.Errorf("the Guaranteed pod after the eviction: phase %s (%s), containers %+v; want running, never restarted",
			k.Status.Phase, k.Status.Reason, cs)
	}
}

// apiPod is a busybox pod bound to the guest's node, with requests and limits both set to
// res (none: BestEffort).
func apiPod(name, script string, res v1.ResourceList) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []v1.Container{{
				Name: "main", Image: "nodelet.local/busybox:1.36", ImagePullPolicy: v1.PullNever,
				Command:   []string{"sh", "-c", script},
				Resources: v1.ResourceRequirements{Requests: res, Limits: res},
			}},
		},
	}
}

// waitAPIPod waits until the API server's pod satisfies cond and returns it.
func waitAPIPod(t *testing.T, cs *kubernetes.Clientset, name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	testutil.WaitFor(t, podTimeout, name+" "+what, func() (bool, string) {
		time.Sleep(time.Second) // emulation: poll the API server gently
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = p
		return cond(p), fmt.Sprintf("phase %s (%s: %s), containers %+v", p.Status.Phase, p.Status.Reason, p.Status.Message, p.Status.ContainerStatuses)
	})
	return got
}

func nodeCondition(node *v1.Node, typ v1.NodeConditionType) *v1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == typ {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// usageInMessage reads "Container main was using QUANTITY," from an eviction message.
func usageInMessage(msg string) (int64, bool) {
	_, rest, ok := strings.Cut(msg, "Container main was using ")
	if !ok {
		return 0, false
	}
	q, _, _ := strings.Cut(rest, ",")
	v, err := resource.ParseQuantity(q)
	if err != nil {
		return 0, false
	}
	return v.Value(), true
}

// memoryAvailable is the node's memory.available as the kubelets read it on cgroup v2:
// capacity less the working set, which is usage (MemTotal less MemFree) less the root
// cgroup's inactive_file, so MemFree plus that.
func memoryAvailable(t *testing.T) int64 {
	t.Helper()
	for _, line := range strings.Split(readCgroup(t, "/", "memory.stat"), "\n") {
		var v int64
		if _, err := fmt.Sscanf(line, "inactive_file %d", &v); err == nil {
			return meminfo(t, "MemFree") + v
		}
	}
	t.Fatal("no inactive_file in /sys/fs/cgroup/memory.stat")
	return 0
}
