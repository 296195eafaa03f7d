//go:build real

package images

import (
	"context"
	"os"
	"testing"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestRealImageGarbageSource reads (never changes) a real runtime's images and image
// filesystem; NODELET_E2E_CRI names the runtime (hack/real-tests.sh sets it).
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
	m, err := NewManager(Options{CRI: testutil.RealCRI(t)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
