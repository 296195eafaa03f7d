package kuberuntime

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// A pod's start and kill leave their steps, with the CRI call behind each, in order.
func TestTimelineRecordsStartAndKill(t *testing.T) {
	rec := timeline.New()
	e := newTestEnv(t, func(o *Options) { o.Timeline = rec })
	pod := newPod("web", ctr("app"))
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	if err := e.mgr.KillPod(context.Background(), pod, nil, 1); err != nil {
		t.Fatal(err)
	}
	got, ok := rec.Get(pod.Namespace, pod.Name)
	if !ok {
		t.Fatal("no timeline")
	}
	var names, calls []string
	for _, s := range got.Steps {
		names, calls = append(names, s.Name), append(calls, s.Call)
		if s.InProgress {
			t.Errorf("step %q still in progress after the pod was killed", s.Name)
		}
	}
	// The image is ensured while the sandbox is created: those two come in either order.
	if len(names) > 1 && names[0] == timeline.ImagePulled {
		names[0], names[1] = names[1], names[0]
		calls[0], calls[1] = calls[1], calls[0]
		got.Steps[0], got.Steps[1] = got.Steps[1], got.Steps[0]
	}
	want := []string{timeline.SandboxCreated, timeline.ImagePulled, timeline.ContainerCreated, timeline.ContainerStarted,
		timeline.KillRequested, timeline.Stopped}
	if !slices.Equal(names, want) {
		t.Fatalf("steps %v, want %v", names, want)
	}
	if calls[0] != "RunPodSandbox" || calls[2] != "CreateContainer" || calls[3] != "StartContainer" {
		t.Errorf("calls %v", calls)
	}
	if got.Steps[0].Detail == "" {
		t.Error("the sandbox step does not give the pod IP")
	}
}

// Each exit of a container instance and each back-off wait is one step, however many syncs
// see them.
func TestTimelineRecordsExitsAndBackOffOnce(t *testing.T) {
	rec := timeline.New()
	e := newTestEnv(t, func(o *Options) { o.Timeline = rec })
	pod := newPod("crashy", ctr("app"))
	pod.Spec.RestartPolicy = "Always"
	e.sync(pod)
	e.exit("app", 3)
	e.sync(pod) // restarts at once
	e.exit("app", 3)
	for range 3 {
		e.sync(pod) // in back-off
	}
	got, _ := rec.Get(pod.Namespace, pod.Name)
	var exits, backoffs int
	for _, s := range got.Steps {
		switch s.Name {
		case timeline.ContainerExited:
			exits++
			if !strings.HasPrefix(s.Detail, "exit code 3") {
				t.Errorf("exit step %q", s.Detail)
			}
		case timeline.BackOff:
			backoffs++
		}
	}
	if exits != 2 || backoffs != 1 {
		t.Errorf("%d exit steps and %d back-off steps, want 2 and 1", exits, backoffs)
	}
}
