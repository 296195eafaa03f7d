package csi

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/mount/mounttest"
)

// Only what the attach/detach controller attaches has a name in volumesInUse: a persistent
// volume whose CSIDriver says attachRequired (or that has no CSIDriver), as upstream.
func TestInUseNameOnlyForVolumesTheControllerAttaches(t *testing.T) {
	inline := &volumes.Spec{Volume: &v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: fakeDriver}}}}
	withDriver := func(attach *bool) *fakeAPI {
		return &fakeAPI{drivers: map[string]*storagev1.CSIDriver{fakeDriver: {
			ObjectMeta: metav1.ObjectMeta{Name: fakeDriver}, Spec: storagev1.CSIDriverSpec{AttachRequired: attach}}}}
	}
	for _, tt := range []struct {
		name string
		api  *fakeAPI
		spec *volumes.Spec
		want v1.UniqueVolumeName
	}{
		{"attachRequired", withDriver(ptr.To(true)), pvSpec("vol1"), "kubernetes.io/csi/fake.csi^vol1"},
		{"attachRequired unset", withDriver(nil), pvSpec("vol1"), "kubernetes.io/csi/fake.csi^vol1"},
		{"no CSIDriver", &fakeAPI{}, pvSpec("vol1"), "kubernetes.io/csi/fake.csi^vol1"},
		{"attachRequired false", withDriver(ptr.To(false)), pvSpec("vol1"), ""},
		{"inline", withDriver(ptr.To(true)), inline, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlugin(shortDir(t), "node-1", NewDrivers(), tt.api, mounttest.New())
			got, err := p.InUseName(context.Background(), testPod("a"), tt.spec)
			if err != nil || got != tt.want {
				t.Errorf("InUseName = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// A volume set up for a driver that needs no attaching is not named in volumesInUse.
func TestSetUpNamesOnlyAttachedVolumesInUse(t *testing.T) {
	p, _, root := newTestPlugin(t, true, noAttach(nil))
	dir := volumeDir(root, "a", "pv-vol1")
	for range 2 { // published, then found mounted
		m, err := p.SetUp(context.Background(), testPod("a"), pvSpec("vol1"), dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.InUse != "" {
			t.Errorf("InUse = %q for a driver with attachRequired false", m.InUse)
		}
	}
}
