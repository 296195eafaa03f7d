package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/lib/metrics/metricstest"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

const dataImage = "nodelet.local/data:1"

// imageVolumePod mounts the image volume "data" whole at /data and its dir "sub" at /sub in
// container app; container plain mounts no image volume.
func imageVolumePod(image string) *v1.Pod {
	app := ctr("app", "sleep", "3600")
	app.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "data", MountPath: "/sub", SubPath: "sub"}}
	pod := newPod("imgvol", app, ctr("plain", "sleep", "3600"))
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: image, PullPolicy: v1.PullIfNotPresent}}}}
	return pod
}

func imageVolumeEnv(t *testing.T, runtimeName, version string) *testEnv {
	e := newTestEnv(t, func(o *Options) { o.ImageVolumes = true })
	e.fake.SetVersion(runtimeName, version)
	if _, _, err := e.mgr.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// The image volume's image is pulled and handed to CRI as upstream does: a read-only Mount
// with image set to the resolved image (and the name the pod gave), no host path, and a
// subPath as image_sub_path.
func TestImageVolumeIsMountedThroughCRI(t *testing.T) {
	e := imageVolumeEnv(t, "containerd", "v2.4.2")
	pod := imageVolumePod(dataImage)
	requested, _ := metricstest.Value(t, "kubelet_image_volume_requested_total", nil)
	mounted, _ := metricstest.Value(t, "kubelet_image_volume_mounted_succeed_total", nil)
	if res := e.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("SyncPod: %+v", res)
	}
	// As upstream counts them: one image volume asked for, mounted twice.
	if got, found := metricstest.Value(t, "kubelet_image_volume_requested_total", nil); !found || got-requested != 1 {
		t.Errorf("kubelet_image_volume_requested_total grew by %v (served: %v), want 1", got-requested, found)
	}
	if got, _ := metricstest.Value(t, "kubelet_image_volume_mounted_succeed_total", nil); got-mounted != 2 {
		t.Errorf("kubelet_image_volume_mounted_succeed_total grew by %v, want 2", got-mounted)
	}
	if pulls := e.fake.Pulls(); len(pulls) != 1 || pulls[0].Image.Image != dataImage || pulls[0].SandboxConfig == nil {
		t.Fatalf("pulls %v, want the volume's image with the sandbox config", pulls)
	}
	mounts := map[string]*runtimeapi.Mount{}
	for _, m := range e.running("app").Config.Mounts {
		mounts[m.ContainerPath] = m
	}
	for path, sub := range map[string]string{"/data": "", "/sub": "sub"} {
		m := mounts[path]
		if m == nil || m.HostPath != "" || !m.Readonly || m.ImageSubPath != sub || m.Image.GetImage() != fakecri.ImageID(dataImage) ||
			m.Image.GetUserSpecifiedImage() != dataImage || m.Image.GetAnnotations()["note"] != "x" {
			t.Errorf("mount %s = %+v, want image %s read-only with image_sub_path %q", path, m, dataImage, sub)
		}
	}
	for _, m := range e.running("plain").Config.Mounts {
		if m.Image != nil {
			t.Errorf("plain container got an image mount %+v", m)
		}
	}
	if !hasEvent(e.events(), `Normal Pulled Successfully pulled image "nodelet.local/data:1"`) {
		t.Error("no Pulled event for the volume's image")
	}
}

// A missing image holds the containers that mount it with upstream's reasons (ErrImagePull,
// then ImagePullBackOff) and a "Failed" event each; a container not mounting it starts.
func TestImageVolumeWithMissingImageWaits(t *testing.T) {
	e := imageVolumeEnv(t, "containerd", "v2.4.2")
	e.fake.SetPullError("nodelet.local/missing:1", errors.New("failed to resolve reference: not found"))
	pod := imageVolumePod("nodelet.local/missing:1")
	res := e.sync(pod)
	if w := res.Waiting["app"]; w.Reason != "ErrImagePull" || !strings.Contains(w.Message, "not found") {
		t.Errorf("app waiting %+v, want ErrImagePull", w)
	}
	if _, waits := res.Waiting["plain"]; waits || len(e.containersNamed("plain")) != 1 || len(e.containersNamed("app")) != 0 {
		t.Errorf("plain waits or app was created: %+v", res.Waiting)
	}
	evs := e.events()
	for _, want := range []string{`Warning Failed Failed to pull image "nodelet.local/missing:1"`, "Warning Failed Error: ErrImagePull"} {
		if !hasEvent(evs, want) {
			t.Errorf("events %q lack %q", evs, want)
		}
	}
	res = e.sync(pod)
	if w := res.Waiting["app"]; w.Reason != "ImagePullBackOff" || !strings.HasPrefix(w.Message, `Back-off pulling image "nodelet.local/missing:1"`) {
		t.Errorf("second sync: app waiting %+v, want ImagePullBackOff", w)
	}
	if !hasEvent(e.events(), "Warning Failed Error: ImagePullBackOff") {
		t.Error("no Error: ImagePullBackOff event")
	}
}

// On a runtime whose version cannot mount images (containerd 1.6 ignores Mount.image) the
// container is not created with an empty directory in place of the image: it waits, naming
// the runtime and the version that would do.
func TestImageVolumeOnAnOldRuntimeIsNotMounted(t *testing.T) {
	e := imageVolumeEnv(t, "containerd", "1.6.20~ds1")
	e.fake.AddImage(dataImage)
	res := e.sync(imageVolumePod(dataImage))
	w := res.Waiting["app"]
	if w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, "containerd 2.1 or later") ||
		!strings.Contains(w.Message, "this node runs containerd 1.6.20~ds1") {
		t.Errorf("app waiting %+v", w)
	}
	if len(e.containersNamed("app")) != 0 || len(e.fake.Pulls()) != 0 {
		t.Error("app was created or the volume's image pulled on a runtime that cannot mount it")
	}
}
