package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The runtime's version decides image volumes at admission, so it must be known before the
// first pod comes: a pod written before nodelet starts is admitted on containerd 2.4 and its
// container gets the image mount.
func TestImageVolumeAdmittedAtStartOnANewRuntime(t *testing.T) {
	cfg, fake, dir := testConfig(t, "--feature-gates=ImageVolume=true")
	fake.SetVersion("containerd", "v2.4.2")
	fake.AddImage("data:v1")
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"imgvol"},
"spec":{"terminationGracePeriodSeconds":1,
"volumes":[{"name":"data","image":{"reference":"data:v1","pullPolicy":"IfNotPresent"}}],
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"],
"volumeMounts":[{"name":"data","mountPath":"/data"}]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "imgvol.json"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	startNodeWith(t, cfg)
	testutil.Eventually(t, "imgvol running", func() bool { return running(fake, "imgvol") != nil })
	var image string
	for _, m := range running(fake, "imgvol").Config.Mounts {
		if m.ContainerPath == "/data" {
			image = m.GetImage().GetImage()
		}
	}
	if image == "" {
		t.Fatalf("no image mount at /data: %v", running(fake, "imgvol").Config.Mounts)
	}
}
