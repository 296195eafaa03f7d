package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

func withEphemeral(pod *v1.Pod, names ...string) *v1.Pod {
	for _, n := range names {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: "debug-img"},
		})
	}
	return pod
}

func conditionStatus(st v1.PodStatus, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func TestEphemeralContainerStatuses(t *testing.T) {
	pod := withEphemeral(podWith(v1.RestartPolicyNever, nil, "a"), "debugger", "failed", "pulling", "new")
	dbg := running("debugger", 0)
	dbg.Image, dbg.ImageRef = "debug-img", "sha256:dbg"
	rt := rs(true, dbg, exited("failed", 2), running("a", 0))
	waiting := map[string]container.WaitingReason{"pulling": {Reason: "ErrImagePull", Message: "no registry"}}

	st := Compute(Input{Pod: pod, Runtime: rt, Waiting: waiting, RuntimeName: "containerd", Now: metav1.NewTime(t0)})

	if st.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running", st.Phase)
	}
	for _, c := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady, v1.PodInitialized} {
		if s := conditionStatus(st, c); s != v1.ConditionTrue {
			t.Errorf("condition %s = %s, want True", c, s)
		}
	}
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].Name != "a" {
		t.Fatalf("container statuses %+v", st.ContainerStatuses)
	}
	if len(st.EphemeralContainerStatuses) != 4 {
		t.Fatalf("ephemeral statuses %+v", st.EphemeralContainerStatuses)
	}

	d := st.EphemeralContainerStatuses[0]
	if d.Name != "debugger" || d.Image != "debug-img" || d.ImageID != "sha256:dbg" ||
		d.ContainerID != "containerd://debugger-id" || d.RestartCount != 0 {
		t.Errorf("debugger status %+v", d)
	}
	if d.State.Running == nil || !d.State.Running.StartedAt.Time.Equal(t0) || d.Ready || d.Started != nil {
		t.Errorf("debugger state %+v ready %v started %v", d.State, d.Ready, d.Started)
	}
	if f := st.EphemeralContainerStatuses[1]; f.State.Terminated == nil || f.State.Terminated.ExitCode != 2 ||
		f.State.Terminated.Reason != "Error" || f.ContainerID != "containerd://failed-x" {
		t.Errorf("failed debugger status %+v", f)
	}
	if p := st.EphemeralContainerStatuses[2]; p.State.Waiting == nil || p.State.Waiting.Reason != "ErrImagePull" {
		t.Errorf("pulling debugger status %+v", p)
	}
	if n := st.EphemeralContainerStatuses[3]; n.State.Waiting == nil || n.State.Waiting.Reason != "ContainerCreating" || n.ContainerID != "" {
		t.Errorf("new debugger status %+v", n)
	}
}

func TestEphemeralContainersDoNotMakePodPendingOrDone(t *testing.T) {
	// A waiting debugger must not send a running pod back to Pending.
	pod := withEphemeral(podWith(v1.RestartPolicyAlways, nil, "a"), "debugger")
	st := Compute(Input{Pod: pod, Runtime: rs(true, running("a", 0)), Now: metav1.NewTime(t0),
		Waiting: map[string]container.WaitingReason{"debugger": {Reason: "CreateContainerConfigError"}}})
	if st.Phase != v1.PodRunning || conditionStatus(st, v1.PodReady) != v1.ConditionTrue {
		t.Errorf("phase %s ready %s, want Running and True", st.Phase, conditionStatus(st, v1.PodReady))
	}
	// A debugger still running does not keep a finished pod alive.
	pod = withEphemeral(podWith(v1.RestartPolicyNever, nil, "a"), "debugger")
	st = Compute(Input{Pod: pod, Runtime: rs(true, running("debugger", 0), exited("a", 0)), Now: metav1.NewTime(t0)})
	if st.Phase != v1.PodSucceeded {
		t.Errorf("phase %s, want Succeeded", st.Phase)
	}
}

func TestNoEphemeralContainersNoStatuses(t *testing.T) {
	st := Compute(Input{Pod: podWith(v1.RestartPolicyAlways, nil, "a"), Runtime: rs(true, running("a", 0)), Now: metav1.NewTime(t0)})
	if st.EphemeralContainerStatuses != nil {
		t.Errorf("ephemeral statuses %+v for a pod without any", st.EphemeralContainerStatuses)
	}
}
