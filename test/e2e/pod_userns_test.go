//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// containerd 1.6 reports no user namespaces, recursive read-only mounts or
// supplementalGroupsPolicy; nodelet refuses each pod field needing one as upstream does,
// while a pod asking recursiveReadOnly only IfPossible runs with a plain read-only mount
// (status.volumeMounts saying Disabled):
//   - hostUsers: false stays Pending with upstream's FailedCreatePodSandBox event, and no
//     sandbox is run with the host's IDs;
//   - recursiveReadOnly Enabled waits in CreateContainerConfigError with upstream's message;
//   - supplementalGroupsPolicy Strict is rejected at admission with upstream's reason.
//
// Skipped on a runtime that has any of them (TestRuntimeGatedPodFieldsOnContainerd2).
func TestRuntimeGatedPodFieldsOnContainerd16(t *testing.T) {
	if f := readRuntimeFeatures(t); f.any() {
		t.Skipf("the runtime at %s reports %+v", endpoint, f)
	}
	c := joinCluster(t)
	c.waitReady(t)
	ctx := context.Background()

	// Ready only if the volume cannot be written: its probe fails on a writable mount.
	ro := podSpec("readonly", "exec sleep 3600")
	ro.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	ro.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true,
		RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyIfPossible)}}
	ro.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
		Exec: &v1.ExecAction{Command: []string{"sh", "-c", "! touch /data/probe"}}}}
	c.createPod(ro)

	userns := podSpec("userns", "exec sleep 3600")
	userns.Spec.HostUsers = ptr.To(false)
	c.createPod(userns)

	rro := podSpec("rro-enabled", "exec sleep 3600")
	rro.Spec.Volumes = ro.Spec.Volumes
	rro.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true,
		RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyEnabled)}}
	c.createPod(rro)

	strict := podSpec("strict", "exec sleep 3600")
	strict.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}
	c.createPod(strict)

	testutil.WaitFor(t, 40*time.Second, "readonly Ready", func() (bool, string) {
		p, err := c.getPod("readonly")
		if err != nil {
			return false, err.Error()
		}
		return condition(p, v1.PodReady) == v1.ConditionTrue, string(p.Status.Phase)
	})
	if p, _ := c.getPod("readonly"); len(p.Status.ContainerStatuses) != 1 || len(p.Status.ContainerStatuses[0].VolumeMounts) != 1 ||
		ptr.Deref(p.Status.ContainerStatuses[0].VolumeMounts[0].RecursiveReadOnly, "") != v1.RecursiveReadOnlyDisabled {
		t.Errorf("readonly pod's volumeMounts status %+v, want data read-only with recursiveReadOnly Disabled", p.Status.ContainerStatuses)
	}

	// Upstream's message, then the runtime the node runs and the release that would lift it.
	lifts := "; containerd 2.0 or later with runc 1.2 or later on Linux 6.3 or later has it)"
	wantSandbox := "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces (this node runs "
	testutil.WaitFor(t, 30*time.Second, "userns FailedCreatePodSandBox event", func() (bool, string) {
		evs, err := c.admin.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=userns,reason=FailedCreatePodSandBox"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if strings.HasPrefix(e.Message, wantSandbox) && strings.HasSuffix(e.Message, lifts) && e.Type == v1.EventTypeWarning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
	if p, err := c.getPod("userns"); err != nil || p.Status.Phase != v1.PodPending {
		t.Errorf("userns pod: %v %v, want Pending", err, p.Status.Phase)
	}
	if sbs := namespaceSandboxesOf(t, c.ns, "userns"); len(sbs) != 0 {
		t.Errorf("userns pod has %d sandboxes in the runtime, want none", len(sbs))
	}

	wantRRO := `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime (this node runs `
	testutil.WaitFor(t, 30*time.Second, "rro-enabled CreateContainerConfigError", func() (bool, string) {
		p, err := c.getPod("rro-enabled")
		if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false, fmt.Sprint(err)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w.Reason == "CreateContainerConfigError" && strings.HasPrefix(w.Message, wantRRO) &&
			strings.HasSuffix(w.Message, "; containerd 2.0 or later with runc 1.1 or later on Linux 5.12 or later has it)"), w.Reason + ": " + w.Message
	})
	if n := len(c.podContainers("rro-enabled")); n != 0 {
		t.Errorf("rro-enabled has %d containers in the runtime, want none", n)
	}

	p := c.waitPodPhase("strict", v1.PodFailed, 30*time.Second)
	if p.Status.Reason != "SupplementalGroupsPolicyNotSupported" ||
		!strings.Contains(p.Status.Message, "SupplementalGroupsPolicy=Strict is not supported in this node (this node runs ") ||
		!strings.HasSuffix(p.Status.Message, "; containerd 2.0 or later has it)") {
		t.Errorf("strict pod: reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	if sbs := namespaceSandboxesOf(t, c.ns, "strict"); len(sbs) != 0 {
		t.Errorf("strict pod has %d sandboxes, want none", len(sbs))
	}
}
