package kuberuntime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodelet/nodelet/internal/runtime/containeropts"
)

func TestRemoveContainerTakesItsLogsAlong(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	e.sync(pod)
	e.exit("app", 1)
	dead := e.containersNamed("app")[0]
	if err := os.MkdirAll(filepath.Dir(dead.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	rotated := dead.LogPath + ".20250101-120000.gz"
	for _, p := range []string{dead.LogPath, rotated} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := containeropts.LinkName(e.mgr.logLinks.Dir, pod.Name, pod.Namespace, "app", dead.ID)
	if _, err := os.Lstat(link); err != nil {
		t.Fatalf("no symlink to begin with: %v", err)
	}

	ctx := context.Background()
	if err := e.mgr.RemoveContainer(ctx, dead.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.fake.Container(dead.ID); ok {
		t.Error("container still in the runtime")
	}
	for _, p := range []string{dead.LogPath, rotated, link} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
	if err := e.mgr.RemoveContainer(ctx, dead.ID); err != nil {
		t.Errorf("removing a missing container: %v", err)
	}
}

func TestRemoveSandboxStopsFirst(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"))
	e.sync(pod)
	sb := e.fake.Sandboxes()[0]
	if err := e.mgr.KillPod(context.Background(), pod, nil, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.fake.Containers() {
		if err := e.mgr.RemoveContainer(context.Background(), c.ID); err != nil {
			t.Fatal(err)
		}
	}
	e.fake.ResetCalls()
	if err := e.mgr.RemoveSandbox(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Sandboxes()); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
	if e.fake.CountCalls("StopPodSandbox") != 1 || e.fake.CountCalls("RemovePodSandbox") != 1 {
		t.Errorf("calls %v", e.fake.Calls())
	}
}
