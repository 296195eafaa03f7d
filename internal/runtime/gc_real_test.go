//go:build real

package runtime

import (
	"context"
	"os"
	"testing"
)

// TestRealImageGarbageSource reads (never changes) a real runtime's images and image
// filesystem; see pod_real_test.go for NODELET_E2E_CRI.
func TestRealImageGarbageSource(t *testing.T) {
	src := realManager(t).(ImageGarbageSource)
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
