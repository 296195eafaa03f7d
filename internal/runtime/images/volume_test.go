package images

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

// An image volume's image goes through the same puller as a container's: its pull policy
// defaults as the API server's (Always for an untagged or :latest image), a failed pull
// gives ErrImagePull then ImagePullBackOff with upstream's events, and a present image with
// IfNotPresent is not pulled again.
func TestEnsureVolumeImageFollowsPolicyAndBacksOff(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pod, _ := testPod("nodelet.local/busybox:1.36", v1.PullIfNotPresent)
	e.fake.AddImage("nodelet.local/data:1")

	ref, reason, _, err := e.mgr.EnsureVolumeImage(ctx, pod, &v1.ImageVolumeSource{Reference: "nodelet.local/data:1"}, nil, Sandbox{})
	if err != nil || reason != "" || ref != fakecri.ImageID("nodelet.local/data:1") {
		t.Fatalf("present tagged image: %q %q %v", ref, reason, err)
	}
	if len(e.fake.Pulls()) != 0 || !hasEvent(e.events(), `Normal Pulled Container image "nodelet.local/data:1" already present on machine`) {
		t.Fatal("a present image with the default policy (IfNotPresent for a tag) was pulled, or no Pulled event")
	}

	// Untagged: Always, so it is pulled although present.
	e.fake.AddImage("nodelet.local/data")
	if _, _, _, err := e.mgr.EnsureVolumeImage(ctx, pod, &v1.ImageVolumeSource{Reference: "nodelet.local/data"}, nil, Sandbox{}); err != nil {
		t.Fatal(err)
	}
	if pulls := e.fake.Pulls(); len(pulls) != 1 || pulls[0].Image.Image != "nodelet.local/data" {
		t.Fatalf("untagged image pulls %v, want one (Always)", pulls)
	}
	e.events()

	vol := &v1.ImageVolumeSource{Reference: "nodelet.local/missing:1", PullPolicy: v1.PullIfNotPresent}
	e.fake.SetPullError(vol.Reference, status.Error(codes.NotFound, "not found"))
	_, reason, msg, err := e.mgr.EnsureVolumeImage(ctx, pod, vol, nil, Sandbox{})
	if reason != ReasonErrImagePull || !errors.Is(err, ErrImagePull) || msg == "" {
		t.Fatalf("missing image: %q %q %v", reason, msg, err)
	}
	evs := e.events()
	if !hasEvent(evs, `Normal Pulling Pulling image "nodelet.local/missing:1"`) || !hasEvent(evs, `Warning Failed Failed to pull image "nodelet.local/missing:1"`) {
		t.Errorf("events %q", evs)
	}
	_, reason, msg, err = e.mgr.EnsureVolumeImage(ctx, pod, vol, nil, Sandbox{})
	if want := `Back-off pulling image "nodelet.local/missing:1": ErrImagePull: `; reason != ReasonImagePullBackOff || !errors.Is(err, ErrImagePullBackOff) || msg[:len(want)] != want {
		t.Fatalf("second try: %q %q %v", reason, msg, err)
	}
	if !hasEvent(e.events(), `Normal BackOff Back-off pulling image "nodelet.local/missing:1"`) {
		t.Error("no BackOff event")
	}

	never := &v1.ImageVolumeSource{Reference: "nodelet.local/absent:1", PullPolicy: v1.PullNever}
	if _, reason, _, _ := e.mgr.EnsureVolumeImage(ctx, pod, never, nil, Sandbox{}); reason != ReasonErrImageNeverPull {
		t.Errorf("Never without the image: %q", reason)
	}
}

// The images of the pods' image volumes are in use for image GC, by ID (whatever name the pod
// used) and by reference, although no container is made from them.
func TestImagesInUseCountsVolumeImages(t *testing.T) {
	e := newEnv(t)
	e.fake.AddImage("nodelet.local/data:1")
	e.mgr.volImages = func() []string {
		return []string{"nodelet.local/data:1", "nodelet.local/data:1", "nodelet.local/gone:1"}
	}
	refs, err := e.mgr.ImagesInUse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"nodelet.local/data:1", fakecri.ImageID("nodelet.local/data:1"), "nodelet.local/gone:1"}
	if !slices.Equal(refs, want) {
		t.Errorf("in use %q, want %q", refs, want)
	}
}
