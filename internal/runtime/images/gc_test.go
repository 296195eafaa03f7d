package images

import (
	"context"
	"testing"

	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
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
