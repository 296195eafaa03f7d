package kuberuntime

import (
	"context"
	"errors"
	"testing"
)

// RemovePod drops what the manager kept for the pod: outcomes pulled ahead and not used. The
// image manager's pull back-off is its own, released with the pod's other state (podsync
// Release; app/release.go lists the image manager).
func TestRemovePodForgetsItsPrepulledImages(t *testing.T) {
	e := newTestEnv(t)
	ok, bad := ctr("ok"), ctr("bad")
	ok.Image, bad.Image = "nodelet.local/ok:1", "nodelet.local/missing:1"
	e.fake.AddImage(ok.Image)
	e.fake.SetPullError(bad.Image, errors.New("registry unreachable"))
	pod := newPod("gone", ok, bad)
	ctx := context.Background()

	e.mgr.PullImages(ctx, pod, e.status(pod))
	if len(e.mgr.prepulled.Keys()) == 0 {
		t.Fatal("nothing was pulled ahead")
	}
	if err := e.mgr.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if keys := e.mgr.prepulled.Keys(); len(keys) != 0 {
		t.Errorf("outcomes pulled ahead still kept after removal: %v", keys)
	}
}
