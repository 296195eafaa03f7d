package volumes

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Volumes still not set up after 2m3s fail the wait with upstream's message.
func TestWaitForAttachAndMountTimesOut(t *testing.T) {
	e := newTestEnv(t, t.TempDir())
	e.plugin.failNext(1 << 30)
	e.run(t)
	done := make(chan error, 1)
	go func() { done <- e.m.WaitForAttachAndMount(t.Context(), podWith("u1", "data")) }()
	for e.plugin.setUpsOf("data") == 0 {
		time.Sleep(time.Millisecond)
	}
	e.clock.Step(2*time.Minute + 2*time.Second)
	select {
	case err := <-done:
		t.Fatalf("returned before 2m3s: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	e.clock.Step(time.Second)
	err := <-done
	want := "unmounted volumes=[data], unattached volumes=[], failed to process volumes=[]: context deadline exceeded"
	if err == nil || err.Error() != want || !errors.Is(err, ErrTimeout) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// A volume that cannot be resolved fails the wait at once, naming it.
func TestUnresolvableVolumeFailsAtOnce(t *testing.T) {
	e := newTestEnv(t, t.TempDir())
	pod := podWith("u1", "data")
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "claim", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}})
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "claim"})
	err := e.m.WaitForAttachAndMount(t.Context(), pod)
	want := `unmounted volumes=[claim data], unattached volumes=[], failed to process volumes=[claim]: ` +
		`volume "claim": persistentVolumeClaim "c" needs the API server; nodelet runs standalone`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// With the ImageVolume gate off no plugin takes an image volume: as upstream's, the pod's
// volumes never get ready, and the wait says why.
func TestImageVolumeWithoutItsPluginFails(t *testing.T) {
	e := newTestEnv(t, t.TempDir())
	pod := podWith("u1")
	pod.Spec.Volumes = []v1.Volume{{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "busybox"}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "img", MountPath: "/img"}}
	err := e.m.WaitForAttachAndMount(t.Context(), pod)
	want := `unmounted volumes=[img], unattached volumes=[], failed to process volumes=[img]: ` +
		`volume "img": no volume plugin matched: image volumes need the ImageVolume feature gate on`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
