//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A pod's RuntimeClass picks the runtime handler its sandbox runs under (the project
// containerd has a second runc handler, test-handler), its overhead (set on the pod by the API
// server) sizes the pod cgroup, and a class whose handler the runtime lacks leaves the pod
// Pending with a FailedCreatePodSandBox event naming the handler.
func TestRuntimeClassPicksTheHandler(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	suffix := rand.String(5)
	good, bad := "e2e-handler-"+suffix, "e2e-unconfigured-"+suffix
	ctx := context.Background()
	classes := c.admin.NodeV1().RuntimeClasses()
	for name, handler := range map[string]string{good: "test-handler", bad: "no-such-handler"} {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler,
			Overhead: &nodev1.Overhead{PodFixed: v1.ResourceList{v1.ResourceMemory: resource.MustParse("4Mi")}}}
		if _, err := classes.Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}

	runs := podSpec("runs", "exec sleep 3600")
	runs.Spec.RuntimeClassName = &good
	runs.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	pod := c.createPod(runs)
	c.waitPodPhase("runs", v1.PodRunning, 60*time.Second)
	sbs := namespaceSandboxesOf(t, c.ns, "runs")
	if len(sbs) != 1 || sbs[0].RuntimeHandler != "test-handler" {
		t.Fatalf("sandboxes %v, want one under test-handler", sbs)
	}
	cgroup := fmt.Sprintf("/sys/fs/cgroup/memory/kubepods/burstable/pod%s/memory.limit_in_bytes", pod.UID)
	if got, want := readInt(t, cgroup), int64(68<<20); got != want {
		t.Errorf("pod cgroup memory limit %d, want the container's 64Mi plus 4Mi overhead (%d)", got, want)
	}

	stuck := podSpec("stuck", "exec sleep 3600")
	stuck.Spec.RuntimeClassName = &bad
	c.createPod(stuck)
	testutil.WaitFor(t, 60*time.Second, "FailedCreatePodSandBox naming the handler", func() (bool, string) {
		evs, err := c.admin.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=stuck,reason=FailedCreatePodSandBox"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, "no-such-handler") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
	p, err := c.getPod("stuck")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending {
		t.Errorf("stuck pod is %s, want Pending", p.Status.Phase)
	}
}

func namespaceSandboxesOf(t *testing.T, ns, pod string) []*cri.PodSandbox {
	t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{Filter: &cri.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.name": pod},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Items
}
