package kuberuntime

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestKillContainerStopsOnlyThatContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("a", "sleep", "1d"), ctr("b", "sleep", "1d"))
	e.sync(pod)
	a, b := e.running("a"), e.running("b")
	msg := "Container a failed liveness probe, will be restarted"
	if err := e.mgr.KillContainer(context.Background(), pod, "containerd://"+a.ID, 7, msg); err != nil {
		t.Fatal(err)
	}
	gotA, _ := e.fake.Container(a.ID)
	if gotA.State != runtimeapi.ContainerState_CONTAINER_EXITED || gotA.StopTimeout != 7 {
		t.Errorf("container a: state %s stop timeout %d, want exited and 7", gotA.State, gotA.StopTimeout)
	}
	if gotB, _ := e.fake.Container(b.ID); gotB.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container b: state %s, want running", gotB.State)
	}
	if sb := e.fake.Sandboxes()[0]; sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox state %s, want ready", sb.State)
	}
	if evs := e.events(); !hasEvent(evs, "Normal Killing "+msg) {
		t.Errorf("events %q lack the Killing event with the prober's message", evs)
	}
}

func TestKillContainerIgnoresStoppedAndUnknown(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("a", "sleep", "1d"))
	e.sync(pod)
	id := e.running("a").ID
	e.exit("a", 1)
	if err := e.mgr.KillContainer(context.Background(), pod, id, 5, "x"); err != nil {
		t.Errorf("stopped container: %v", err)
	}
	if err := e.mgr.KillContainer(context.Background(), pod, "no-such-id", 5, "x"); err != nil {
		t.Errorf("unknown container: %v", err)
	}
	for _, c := range e.fake.Calls() {
		if c == "StopContainer" {
			t.Errorf("StopContainer called for a container that is not running")
		}
	}
}
