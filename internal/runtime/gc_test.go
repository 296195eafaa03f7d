package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodelet/nodelet/internal/cri/fakecri"
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
	link := containerLogLink(e.mgr.containerLogsDir, pod.Name, pod.Namespace, "app", dead.ID)
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

func TestImageGarbageSource(t *testing.T) {
	e := newTestEnv(t)
	e.fake.AddImage("example.com/other:1")
	ctx := context.Background()
	images, err := e.mgr.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 2 || images[0].Size == 0 {
		t.Fatalf("images %+v", images)
	}
	if err := e.mgr.RemoveImage(ctx, fakecri.ImageID("example.com/other:1")); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.Images(); len(got) != 1 || got[0] != testImage {
		t.Errorf("images left %v", got)
	}
	// The fake reports no image filesystem.
	if _, err := e.mgr.ImageFsMountpoint(ctx); err == nil {
		t.Error("no error without an image filesystem")
	}
}

// TestRealImageGarbageSource reads (never changes) a real runtime's images and image
// filesystem; see real_test.go for NODELET_E2E_CRI.
func TestRealImageGarbageSource(t *testing.T) {
	src := realManager(t)
	ctx := context.Background()
	images, err := src.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range images {
		t.Logf("image %s tags %v digests %v size %d pinned %v", img.ID, img.RepoTags, img.RepoDigests, img.Size, img.Pinned)
	}
	mp, err := src.ImageFsMountpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mp); err != nil {
		t.Errorf("image filesystem mountpoint %s: %v", mp, err)
	}
	t.Logf("image filesystem at %s", mp)
}
