package status

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

func podWith(policy v1.RestartPolicy, inits []string, apps ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	p.Spec.RestartPolicy = policy
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "img"})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img"})
	}
	return p
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func running(name string, restarts int) *container.ContainerStatus {
	return &container.ContainerStatus{ID: name + "-id", Name: name, State: container.StateRunning, StartedAt: t0, RestartCount: restarts}
}

func exited(name string, code int32) *container.ContainerStatus {
	return &container.ContainerStatus{ID: name + "-x", Name: name, State: container.StateExited, ExitCode: code, StartedAt: t0, FinishedAt: t0.Add(time.Second)}
}

func rs(ready bool, cs ...*container.ContainerStatus) *container.PodStatus {
	return &container.PodStatus{
		UID: "u", IPs: []string{"10.85.0.7"},
		Sandboxes:  []*container.SandboxStatus{{ID: "sb", Ready: ready}},
		Containers: cs,
	}
}

func TestPhase(t *testing.T) {
	cases := []struct {
		name    string
		pod     *v1.Pod
		rt      *container.PodStatus
		waiting map[string]container.WaitingReason
		want    v1.PodPhase
	}{
		{"nothing yet", podWith(v1.RestartPolicyAlways, nil, "a"), nil, nil, v1.PodPending},
		{"running", podWith(v1.RestartPolicyAlways, nil, "a"), rs(true, running("a", 0)), nil, v1.PodRunning},
		{"one of two created", podWith(v1.RestartPolicyAlways, nil, "a", "b"), rs(true, running("a", 0)), nil, v1.PodPending},
		{"exited under Always", podWith(v1.RestartPolicyAlways, nil, "a"), rs(true, exited("a", 1)), nil, v1.PodRunning},
		{"crash loop", podWith(v1.RestartPolicyAlways, nil, "a"), rs(true, exited("a", 1)),
			map[string]container.WaitingReason{"a": {Reason: "CrashLoopBackOff"}}, v1.PodRunning},
		{"succeeded under Never", podWith(v1.RestartPolicyNever, nil, "a"), rs(false, exited("a", 0)), nil, v1.PodSucceeded},
		{"failed under Never", podWith(v1.RestartPolicyNever, nil, "a", "b"), rs(false, exited("a", 0), exited("b", 2)), nil, v1.PodFailed},
		{"failed under OnFailure keeps running", podWith(v1.RestartPolicyOnFailure, nil, "a"), rs(true, exited("a", 2)), nil, v1.PodRunning},
		{"succeeded under OnFailure", podWith(v1.RestartPolicyOnFailure, nil, "a"), rs(true, exited("a", 0)), nil, v1.PodSucceeded},
		{"init running", podWith(v1.RestartPolicyAlways, []string{"i"}, "a"), rs(true, running("i", 0)), nil, v1.PodPending},
		{"init failed under Never", podWith(v1.RestartPolicyNever, []string{"i"}, "a"), rs(true, exited("i", 1)), nil, v1.PodFailed},
		{"init done", podWith(v1.RestartPolicyAlways, []string{"i"}, "a"), rs(true, running("a", 0), exited("i", 0)), nil, v1.PodRunning},
		{"image pull backoff", podWith(v1.RestartPolicyAlways, nil, "a"), rs(true),
			map[string]container.WaitingReason{"a": {Reason: "ImagePullBackOff"}}, v1.PodPending},
	}
	for _, tc := range cases {
		st := Compute(Input{Pod: tc.pod, Runtime: tc.rt, Waiting: tc.waiting, Now: metav1.NewTime(t0)})
		if st.Phase != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, st.Phase, tc.want)
		}
	}
}

func TestContainerStatusesAndConditions(t *testing.T) {
	pod := podWith(v1.RestartPolicyAlways, nil, "a", "b")
	prevA := exited("a", 137)
	prevA.ID = "a-old"
	rt := rs(true, running("a", 1), prevA)
	st := Compute(Input{Pod: pod, Runtime: rt, RuntimeName: "containerd", HostIPs: []string{"192.0.2.1"}, Now: metav1.NewTime(t0)})

	a := st.ContainerStatuses[0]
	if a.State.Running == nil || !a.Ready || a.RestartCount != 1 || a.ContainerID != "containerd://a-id" {
		t.Fatalf("container a status wrong: %+v", a)
	}
	if a.LastTerminationState.Terminated == nil || a.LastTerminationState.Terminated.ExitCode != 137 {
		t.Fatalf("last termination of a not reported: %+v", a.LastTerminationState)
	}
	b := st.ContainerStatuses[1]
	if b.State.Waiting == nil || b.State.Waiting.Reason != "ContainerCreating" || b.Ready {
		t.Fatalf("container b status wrong: %+v", b)
	}
	if st.PodIP != "10.85.0.7" || st.HostIP != "192.0.2.1" {
		t.Fatalf("IPs: pod %q host %q", st.PodIP, st.HostIP)
	}
	want := map[v1.PodConditionType]v1.ConditionStatus{
		v1.PodScheduled: v1.ConditionTrue, v1.PodReadyToStartContainers: v1.ConditionTrue,
		v1.PodInitialized: v1.ConditionTrue, v1.ContainersReady: v1.ConditionFalse, v1.PodReady: v1.ConditionFalse,
	}
	for _, c := range st.Conditions {
		if want[c.Type] != c.Status {
			t.Errorf("condition %s = %s, want %s", c.Type, c.Status, want[c.Type])
		}
		if c.Type == v1.PodReady && c.Message != "containers with unready status: [b]" {
			t.Errorf("ready message %q", c.Message)
		}
	}
	if st.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("qos %s", st.QOSClass)
	}
}

func TestTransitionTimesAndTerminalPhaseStick(t *testing.T) {
	pod := podWith(v1.RestartPolicyNever, nil, "a")
	first := Compute(Input{Pod: pod, Runtime: rs(true, running("a", 0)), Now: metav1.NewTime(t0)})
	later := metav1.NewTime(t0.Add(time.Minute))
	second := Compute(Input{Pod: pod, Runtime: rs(true, running("a", 0)), Previous: &first, Now: later})
	for i, c := range second.Conditions {
		if !c.LastTransitionTime.Equal(&first.Conditions[i].LastTransitionTime) {
			t.Errorf("condition %s transition time moved without a change", c.Type)
		}
	}
	if !second.StartTime.Equal(first.StartTime) {
		t.Error("start time moved")
	}
	done := Compute(Input{Pod: pod, Runtime: rs(false, exited("a", 0)), Previous: &second, Now: later})
	if done.Phase != v1.PodSucceeded {
		t.Fatalf("phase %s", done.Phase)
	}
	// The runtime forgetting the containers must not move a finished pod back to Pending.
	after := Compute(Input{Pod: pod, Runtime: nil, Previous: &done, Now: later})
	if after.Phase != v1.PodSucceeded {
		t.Fatalf("terminal phase moved back to %s", after.Phase)
	}
}

func TestEvictedPodKeepsReasonAndDisruptionTarget(t *testing.T) {
	pod := podWith(v1.RestartPolicyAlways, nil, "a")
	now := metav1.Now()
	evicted := Compute(Input{Pod: pod, Runtime: rs(true, running("a", 0)), Now: now})
	evicted.Phase, evicted.Reason, evicted.Message = v1.PodFailed, "Evicted", "The node was low on resource: memory. "
	evicted.Conditions = append(evicted.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet})
	after := Compute(Input{Pod: pod, Runtime: rs(false, exited("a", 137)), Previous: &evicted, Now: now})
	if after.Phase != v1.PodFailed || after.Reason != "Evicted" || after.Message != evicted.Message {
		t.Fatalf("after the kill: phase %s reason %q message %q, want the eviction's", after.Phase, after.Reason, after.Message)
	}
	var targets int
	for _, c := range after.Conditions {
		if c.Type == v1.DisruptionTarget {
			targets++
		}
	}
	if targets != 1 {
		t.Errorf("%d DisruptionTarget conditions after the kill, want 1: %v", targets, after.Conditions)
	}
}

func TestStatusImageIsWhatRunsNotTheUpdatedSpec(t *testing.T) {
	pod := podWith(v1.RestartPolicyAlways, []string{"init"}, "app")
	pod.Spec.InitContainers[0].Image = "registry.invalid/new:1" // updated after it completed
	done := exited("init", 0)
	done.Image = "img"
	st := Compute(Input{Pod: pod, Runtime: rs(true, running("app", 0), done), Now: metav1.NewTime(t0)})
	if got := st.InitContainerStatuses[0].Image; got != "img" {
		t.Fatalf("init status image %q, want the image it ran with", got)
	}
	if got := st.ContainerStatuses[0].Image; got != "img" {
		t.Fatalf("app status image %q, want the spec's while the runtime does not say", got)
	}
}

func TestReadinessGateKeepsPodUnready(t *testing.T) {
	pod := podWith(v1.RestartPolicyAlways, nil, "app")
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	ready := func(st v1.PodStatus) v1.PodCondition {
		for _, c := range st.Conditions {
			if c.Type == v1.PodReady {
				return c
			}
		}
		return v1.PodCondition{}
	}
	st := Compute(Input{Pod: pod, Runtime: rs(true, running("app", 0)), Now: metav1.NewTime(t0)})
	if c := ready(st); c.Status != v1.ConditionFalse || c.Reason != "ReadinessGatesNotReady" {
		t.Fatalf("gate missing: Ready %+v", c)
	}
	pod.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}
	st = Compute(Input{Pod: pod, Runtime: rs(true, running("app", 0)), Now: metav1.NewTime(t0)})
	if c := ready(st); c.Status != v1.ConditionTrue {
		t.Fatalf("gate met: Ready %+v", c)
	}
}

func TestSucceededInitContainerIsReady(t *testing.T) {
	pod := podWith(v1.RestartPolicyNever, []string{"ok", "bad"}, "app")
	st := Compute(Input{Pod: pod, Runtime: rs(true, exited("ok", 0), exited("bad", 1)), Now: metav1.NewTime(t0)})
	if !st.InitContainerStatuses[0].Ready || st.InitContainerStatuses[1].Ready {
		t.Fatalf("init readiness %v/%v, want true for exit 0 and false for exit 1",
			st.InitContainerStatuses[0].Ready, st.InitContainerStatuses[1].Ready)
	}
}

func TestDeletedPodEndsFailedWhateverItsRestartPolicy(t *testing.T) {
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure} {
		pod := podWith(policy, nil, "app")
		killed := exited("app", 137)
		if st := Compute(Input{Pod: pod, Runtime: rs(false, killed), Now: metav1.NewTime(t0)}); st.Phase != v1.PodRunning {
			t.Fatalf("%s, not final: phase %s, want Running (it would be restarted)", policy, st.Phase)
		}
		if st := Compute(Input{Pod: pod, Runtime: rs(false, killed), Now: metav1.NewTime(t0), Final: true}); st.Phase != v1.PodFailed {
			t.Fatalf("%s, final: phase %s, want Failed", policy, st.Phase)
		}
	}
	pod := podWith(v1.RestartPolicyAlways, nil, "app")
	if st := Compute(Input{Pod: pod, Runtime: rs(false, exited("app", 0)), Now: metav1.NewTime(t0), Final: true}); st.Phase != v1.PodSucceeded {
		t.Fatalf("all exited 0, final: phase %s, want Succeeded", st.Phase)
	}
}

func TestInitContainersNotYetCreatedWaitOnInitialization(t *testing.T) {
	pod := podWith(v1.RestartPolicyAlways, []string{"init1", "init2"}, "app")
	st := Compute(Input{Pod: pod, Runtime: rs(true, exited("init1", 1)), Now: metav1.NewTime(t0)})
	for _, cs := range append(st.InitContainerStatuses[1:], st.ContainerStatuses...) {
		if w := cs.State.Waiting; w == nil || w.Reason != "PodInitializing" {
			t.Errorf("%s: state %+v, want waiting PodInitializing", cs.Name, cs.State)
		}
	}
	plain := podWith(v1.RestartPolicyAlways, nil, "app")
	if w := Compute(Input{Pod: plain, Runtime: rs(true), Now: metav1.NewTime(t0)}).ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
		t.Errorf("no init containers: %+v, want ContainerCreating", w)
	}
}

// Every container status carries started, false until the container runs (and its
// startupProbe passed): upstream's prober fills it for all of them, and clients (the node
// suite's WaitForPodContainerStarted) dereference it from the first status on.
func TestStartedIsSetForEveryContainer(t *testing.T) {
	pod := podWith(v1.RestartPolicyAlways, []string{"init1", "init2"}, "app")
	st := Compute(Input{Pod: pod, Runtime: rs(true, exited("init1", 1)), Waiting: map[string]container.WaitingReason{"init1": {Reason: "CrashLoopBackOff"}}, Now: metav1.NewTime(t0)})
	for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
		if cs.Started == nil || *cs.Started {
			t.Errorf("%s: started %v, want false", cs.Name, cs.Started)
		}
	}
	running := Compute(Input{Pod: podWith(v1.RestartPolicyAlways, nil, "app"), Runtime: rs(true, running("app", 0)), Now: metav1.NewTime(t0)})
	if s := running.ContainerStatuses[0].Started; s == nil || !*s {
		t.Errorf("running container without a startupProbe: started %v, want true", s)
	}
}
