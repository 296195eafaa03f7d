package podsync

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// initFailedBesideSidecar is a restartPolicy Never pod whose second init container failed while
// the sidecar started before it still runs, until KillPod stops it.
type initFailedBesideSidecar struct {
	fakeRuntime
	sidecarRunning bool
}

func (f *initFailedBesideSidecar) KillPod(context.Context, *v1.Pod, *container.RunningPod, int64) error {
	f.killed++
	f.sidecarRunning = false
	return nil
}

func (f *initFailedBesideSidecar) GetPodStatus(_ context.Context, uid types.UID, name, ns string) (*container.PodStatus, error) {
	start := time.Now().Add(-time.Minute)
	sidecar := &container.ContainerStatus{ID: "s1", Name: "sidecar", State: container.StateRunning, StartedAt: start}
	if !f.sidecarRunning {
		sidecar.State, sidecar.ExitCode, sidecar.FinishedAt = container.StateExited, 137, time.Now()
	}
	return &container.PodStatus{UID: uid, Name: name, Namespace: ns,
		Sandboxes: []*container.SandboxStatus{{ID: "sb", Ready: f.sidecarRunning}},
		Containers: []*container.ContainerStatus{sidecar,
			{ID: "i1", Name: "init", State: container.StateExited, ExitCode: 1, StartedAt: start, FinishedAt: time.Now()}},
	}, nil
}

// As upstream, the pod's phase goes Failed only once its sidecar has been stopped: the sync
// that finds the init container failed ends the pod, but the status it records keeps the phase
// it had (the node suite reads the containers' logs as soon as the phase is terminal).
func TestTerminalPhaseWaitsForRunningSidecars(t *testing.T) {
	rt := &initFailedBesideSidecar{sidecarRunning: true}
	s := newTestSyncer(t, rt)
	pod := testPod()
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{
		{Name: "sidecar", Image: "busybox", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)},
		{Name: "init", Image: "busybox"},
	}
	out, err := s.SyncPod(context.Background(), pod)
	if err != nil || !out.Terminal {
		t.Fatalf("sync with the init container failed = %+v, %v; want terminal", out, err)
	}
	if st, _ := s.Statuses.Get(pod.UID); st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		t.Fatalf("phase %s while the sidecar still runs; want it held", st.Phase)
	}
	if err := s.SyncTerminatingPod(context.Background(), pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Statuses.Get(pod.UID); rt.killed != 1 || st.Phase != v1.PodFailed {
		t.Fatalf("after the kill: killed=%d phase %s, want Failed", rt.killed, st.Phase)
	}
}

// After a nodelet restart nothing is recorded yet: the held phase is the API's.
func TestHeldPhaseAfterRestartIsTheAPIs(t *testing.T) {
	if got := heldPhase(nil, v1.PodRunning); got != v1.PodRunning {
		t.Errorf("no record, API Running: held %s", got)
	}
	if got := heldPhase(nil, ""); got != v1.PodPending {
		t.Errorf("no record, no API phase: held %s", got)
	}
	if got := heldPhase(&v1.PodStatus{Phase: v1.PodPending}, v1.PodRunning); got != v1.PodPending {
		t.Errorf("recorded Pending: held %s", got)
	}
}
