package plugins

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/volumes"
)

// Image volumes have a plugin only with the ImageVolume gate on; it sets nothing up on the
// host (the runtime mounts the image) and its mount is read-only.
func TestImagePluginOnlyWithTheGate(t *testing.T) {
	spec := &volumes.Spec{Volume: &v1.Volume{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "busybox"}}}}
	takes := func(all []volumes.Plugin) volumes.Plugin {
		for _, p := range all {
			if p.CanSetUp(spec) {
				return p
			}
		}
		return nil
	}
	if p := takes(All(Deps{})); p != nil {
		t.Fatalf("gate off: %s takes an image volume", p.Name())
	}
	p := takes(All(Deps{ImageVolumes: true}))
	if p == nil || p.Name() != "kubernetes.io~image" {
		t.Fatalf("gate on: plugin %v", p)
	}
	dir := t.TempDir() + "/img"
	m, err := p.SetUp(context.Background(), &v1.Pod{}, spec, dir)
	if err != nil || !m.ReadOnly || m.Path != "" {
		t.Errorf("SetUp = %+v, %v; want a read-only mount with no host path", m, err)
	}
}
