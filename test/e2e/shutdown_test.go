//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Graceful node shutdown: with shutdownGracePeriodByPodPriority, SIGTERM terminates the
// lower-priority pod first, then the higher one, reports both Failed/Terminated in the API with
// upstream's message, and posts the Node NotReady ("node is shutting down") before exiting.
func TestGracefulNodeShutdownByPriority(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "kubelet.yaml")
	if err := os.WriteFile(cfgFile, []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
shutdownGracePeriodByPodPriority:
- {priority: 0, shutdownGracePeriodSeconds: 10}
- {priority: 100000, shutdownGracePeriodSeconds: 10}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	high := "e2e-high-" + rand.String(5)
	if _, err := adminClient(t).SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: high}, Value: 100000}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adminClient(t).SchedulingV1().PriorityClasses().Delete(context.Background(), high, metav1.DeleteOptions{})
	})

	c := joinCluster(t, "--config="+cfgFile)
	c.waitReady(t)
	script := "trap 'exit 0' TERM; while true; do sleep 0.2; done"
	c.createPod(podSpec("low", script))
	important := podSpec("important", script)
	important.Spec.PriorityClassName = high
	c.createPod(important)
	c.waitPodPhase("low", v1.PodRunning, 60*time.Second)
	c.waitPodPhase("important", v1.PodRunning, 60*time.Second)

	c.stop(syscall.SIGTERM)
	lowEnd, highEnd := finishedAt(t, c, "low"), finishedAt(t, c, "important")
	if !lowEnd.Before(highEnd) {
		t.Errorf("low-priority pod ended %v, important one %v: want low first", lowEnd, highEnd)
	}
	for _, name := range []string{"low", "important"} {
		p, err := c.getPod(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Terminated" ||
			p.Status.Message != "Pod was terminated in response to imminent node shutdown." {
			t.Errorf("%s: phase %s reason %q message %q", name, p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
	}
	for _, cond := range c.node().Status.Conditions {
		if cond.Type == v1.NodeReady && (cond.Status != v1.ConditionFalse || !strings.Contains(cond.Message, "node is shutting down")) {
			t.Errorf("Ready %s %q, want False saying the node is shutting down", cond.Status, cond.Message)
		}
	}
}

// finishedAt is when the pod's container exited, from the runtime.
func finishedAt(t *testing.T, c *cluster, pod string) time.Time {
	t.Helper()
	cs := c.podContainers(pod)
	if len(cs) == 0 {
		t.Fatalf("%s: no container", pod)
	}
	ctx, cancel := criCtx()
	defer cancel()
	st, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: cs[0].Id})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.State != cri.ContainerState_CONTAINER_EXITED {
		t.Fatalf("%s: container %s, want exited", pod, st.Status.State)
	}
	return time.Unix(0, st.Status.FinishedAt)
}
