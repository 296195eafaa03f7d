package images

import (
	"context"
	"os"
	"testing"

	"github.com/nodelet/nodelet/internal/cri"
	"github.com/nodelet/nodelet/internal/cri/fakecri"
)

const gcTestImage = "nodelet.local/busybox:1.36"

func TestImageGarbageSource(t *testing.T) {
	e := newEnv(t)
	e.fake.AddImage(gcTestImage)
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
	if got := e.fake.Images(); len(got) != 1 || got[0] != gcTestImage {
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
	src := realImages(t)
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

// realImages is an image manager over the real runtime NODELET_E2E_CRI names.
func realImages(t *testing.T) *Manager {
	t.Helper()
	endpoint := os.Getenv("NODELET_E2E_CRI")
	if endpoint == "" {
		t.Skip("NODELET_E2E_CRI is not set; skipping the real runtime test")
	}
	client, err := cri.Connect(endpoint, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	m, err := NewManager(Options{CRI: client})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
