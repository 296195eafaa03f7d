package kuberuntime

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/testutil"
)

// eventReasons keeps the reason (second word) of each recorded event.
func eventReasons(events []string) []string {
	var out []string
	for _, ev := range events {
		if f := strings.Fields(ev); len(f) > 1 {
			out = append(out, f[1])
		}
	}
	return out
}

func TestImagesPulledAheadAreUsedByTheStart(t *testing.T) {
	e := newTestEnv(t)
	a, b := ctr("a"), ctr("b")
	a.Image, b.Image = "nodelet.local/a:1", "nodelet.local/b:1"
	b.ImagePullPolicy = v1.PullAlways
	pod := newPod("ahead", a, b)

	e.mgr.PullImages(context.Background(), pod, e.status(pod))
	if n := e.fake.CountCalls("PullImage"); n != 2 {
		t.Fatalf("PullImage calls ahead = %d, want 2", n)
	}
	if len(e.fake.Sandboxes()) != 0 {
		t.Fatal("pulling ahead created a sandbox")
	}
	want := []string{"Pulling", "Pulled", "Pulling", "Pulled"}
	if got := eventReasons(e.events()); !reflect.DeepEqual(got, want) {
		t.Fatalf("events ahead = %v, want %v", got, want)
	}

	if res := e.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod: err %v waiting %v", res.Err, res.Waiting)
	}
	if n := e.fake.CountCalls("PullImage"); n != 2 {
		t.Errorf("PullImage calls after the start = %d, want still 2 (Always pulled once for this start)", n)
	}
	want = []string{"Created", "Started", "Created", "Started"}
	if got := eventReasons(e.events()); !reflect.DeepEqual(got, want) {
		t.Errorf("events of the start = %v, want %v (no second Pulled)", got, want)
	}
	// Used once: a later start of the same container ensures its image again.
	if _, ok := e.mgr.prepulled.Get(prepullKey(pod, &pod.Spec.Containers[1])); ok {
		t.Error("the outcome pulled ahead is still kept after the start used it")
	}
}

func TestFailedPullAheadIsTheStartsFailure(t *testing.T) {
	e := newTestEnv(t)
	pod := missingImagePod(e, "fails")

	e.mgr.PullImages(context.Background(), pod, e.status(pod))
	res := e.sync(pod)
	if w := res.Waiting["app"]; res.Err == nil || w.Reason != "ErrImagePull" || w.Message != "not found" {
		t.Fatalf("start after a failed pull ahead: err %v waiting %+v", res.Err, w)
	}
	if n := e.fake.CountCalls("PullImage"); n != 1 {
		t.Errorf("PullImage calls = %d, want 1", n)
	}
	if len(e.fake.Sandboxes()) != 1 {
		t.Error("no sandbox: a pod whose image fails still gets its sandbox, as upstream")
	}
	// The back-off the failed pull started holds the next sync.
	if w := e.sync(pod).Waiting["app"]; w.Reason != "ImagePullBackOff" {
		t.Errorf("next sync: %+v, want ImagePullBackOff", w)
	}
}

func TestPullAheadTakesOnlyWhatTheNextStartRuns(t *testing.T) {
	e := newTestEnv(t)
	initC, app := ctr("init"), ctr("app")
	initC.Image, app.Image = "nodelet.local/init:1", "nodelet.local/app:1"
	pod := newPod("init", app)
	pod.Spec.InitContainers = []v1.Container{initC}

	e.mgr.PullImages(context.Background(), pod, e.status(pod))
	if got := e.fake.Images(); !slices.Contains(got, "nodelet.local/init:1") || slices.Contains(got, "nodelet.local/app:1") {
		t.Errorf("images after pulling ahead = %v, want the init container's only", got)
	}
}

// A new pod's image is pulled while its sandbox is being created, and the start uses that pull
// (events once, in upstream's order).
func TestFirstStartPullsWhileTheSandboxIsCreated(t *testing.T) {
	e := newTestEnv(t)
	app := ctr("app")
	app.Image = "nodelet.local/beside:1"
	pod := newPod("beside", app)
	release := e.fake.Hold("RunPodSandbox")
	defer release()
	done := make(chan container.SyncResult, 1)
	go func() { done <- e.sync(pod) }()
	testutil.Eventually(t, "PullImage called while RunPodSandbox is held", func() bool {
		return e.fake.CountCalls("RunPodSandbox") == 1 && e.fake.CountCalls("PullImage") == 1
	})
	select {
	case res := <-done:
		t.Fatalf("SyncPod returned before its sandbox was created: %+v", res)
	default:
	}
	release()
	if res := <-done; res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod: err %v waiting %v", res.Err, res.Waiting)
	}
	if n := e.fake.CountCalls("PullImage"); n != 1 {
		t.Errorf("PullImage calls = %d, want 1", n)
	}
	want := []string{"Pulling", "Pulled", "Created", "Started"}
	if got := eventReasons(e.events()); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

// A pod whose images were pulled ahead (waiting for a start slot) does not ensure them again
// beside its sandbox.
func TestPulledAheadImagesAreNotEnsuredAgainBesideTheSandbox(t *testing.T) {
	e := newTestEnv(t)
	app := ctr("app")
	app.Image, app.ImagePullPolicy = "nodelet.local/once:1", v1.PullAlways
	pod := newPod("once", app)
	e.mgr.PullImages(context.Background(), pod, e.status(pod))
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	// With Always, ensuring the image again would pull it again.
	if n := e.fake.CountCalls("PullImage"); n != 1 {
		t.Errorf("PullImage calls = %d, want 1 (Always, pulled once for this start)", n)
	}
	want := []string{"Pulling", "Pulled", "Created", "Started"}
	if got := eventReasons(e.events()); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}
