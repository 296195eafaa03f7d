package runtime

import (
	"context"
	"slices"
	"testing"

	"github.com/nodelet/nodelet/internal/timeline"
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
