package csi

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/mount/mounttest"
)

const fakeDriver = "fake.csi"

// newTestPlugin serves a fake node service, registers it and returns the plugin over it.
func newTestPlugin(t *testing.T, stage bool, api *fakeAPI) (*Plugin, *fakeNode, string) {
	t.Helper()
	return newTestPluginOver(t, &fakeNode{stage: stage}, api)
}

// newTestPluginOver is newTestPlugin over a node service with the capabilities fn has.
func newTestPluginOver(t *testing.T, fn *fakeNode, api *fakeAPI) (*Plugin, *fakeNode, string) {
	t.Helper()
	root := shortDir(t)
	m := mounttest.New()
	fn.mounter = m
	sock := filepath.Join(root, "csi.sock")
	serveUnix(t, sock, func(s *grpc.Server) { csipb.RegisterNodeServer(s, fn) })
	drivers := NewDrivers()
	d, err := connect(context.Background(), fakeDriver, sock, filepath.Join(root, "reg.sock"))
	if err != nil {
		t.Fatal(err)
	}
	drivers.set(d)
	t.Cleanup(d.client.close)
	var a API
	if api != nil {
		a = api
	}
	return NewPlugin(root, "node-1", drivers, a, m), fn, root
}

func noAttach(extra func(*storagev1.CSIDriverSpec)) *fakeAPI {
	spec := storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true)}
	if extra != nil {
		extra(&spec)
	}
	return &fakeAPI{drivers: map[string]*storagev1.CSIDriver{fakeDriver: {ObjectMeta: metav1.ObjectMeta{Name: fakeDriver}, Spec: spec}}}
}

func pvSpec(handle string) *volumes.Spec {
	return &volumes.Spec{
		Volume: &v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		PV: &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-" + handle},
			Spec: v1.PersistentVolumeSpec{
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
					Driver: fakeDriver, VolumeHandle: handle, FSType: "ext4", VolumeAttributes: map[string]string{"a": "b"},
				}},
			},
		},
	}
}

func testPod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "ns", UID: types.UID(uid)}}
}

func volumeDir(root, uid, name string) string {
	return filepath.Join(root, "pods", uid, "volumes", PluginName, name)
}

func TestSetUpStagesPublishesPerPodAndUnstagesAfterTheLastPod(t *testing.T) {
	p, fn, root := newTestPlugin(t, true, noAttach(nil))
	ctx := context.Background()
	spec := pvSpec("vol1")
	staging := p.stagingPath(fakeDriver, "vol1")
	dirA, dirB := volumeDir(root, "a", "pv-vol1"), volumeDir(root, "b", "pv-vol1")

	m, err := p.SetUp(ctx, testPod("a"), spec, dirA)
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != filepath.Join(dirA, "mount") || m.ReadOnly {
		t.Fatalf("mount = %+v", m)
	}
	want := []string{"Stage vol1 " + staging, "Publish vol1 " + m.Path}
	if got := fn.called(); !slices.Equal(got, want) {
		t.Fatalf("calls = %q, want %q", got, want)
	}
	pub := fn.reqs[1].(*csipb.NodePublishVolumeRequest)
	if pub.StagingTargetPath != staging || pub.VolumeContext["csi.storage.k8s.io/pod.name"] != "pod-a" ||
		pub.VolumeContext["a"] != "b" || pub.VolumeCapability.GetMount().GetFsType() != "ext4" ||
		pub.VolumeCapability.GetAccessMode().GetMode() != csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER {
		t.Fatalf("publish request = %+v", pub)
	}
	// Set up again (a restart, or another sync): the target is mounted, nothing is called.
	if _, err := p.SetUp(ctx, testPod("a"), spec, dirA); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SetUp(ctx, testPod("b"), spec, dirB); err != nil {
		t.Fatal(err)
	}
	if got := len(fn.called()); got != 4 {
		t.Fatalf("calls after a second pod = %q", fn.called())
	}

	if err := p.TearDown(context.Background(), "a", dirA); err != nil {
		t.Fatal(err)
	}
	if got := fn.called()[4:]; !slices.Equal(got, []string{"Unpublish vol1 " + filepath.Join(dirA, "mount")}) {
		t.Fatalf("tear-down of one of two pods called %q; the volume must stay staged", got)
	}
	if _, err := os.Stat(dirA); !os.IsNotExist(err) {
		t.Fatalf("volume dir of pod a left: %v", err)
	}
	if err := p.TearDown(context.Background(), "b", dirB); err != nil {
		t.Fatal(err)
	}
	want = []string{"Unpublish vol1 " + filepath.Join(dirB, "mount"), "Unstage vol1 " + staging}
	if got := fn.called()[5:]; !slices.Equal(got, want) {
		t.Fatalf("last tear-down called %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Dir(staging)); !os.IsNotExist(err) {
		t.Fatalf("staging dir left: %v", err)
	}
}

func TestSetUpWaitsForTheVolumeAttachment(t *testing.T) {
	api := &fakeAPI{attachments: map[string]*storagev1.VolumeAttachment{}}
	p, fn, root := newTestPlugin(t, false, api)
	name := attachmentName("vol1", fakeDriver, "node-1")
	go func() {
		time.Sleep(1200 * time.Millisecond)
		api.mu.Lock()
		api.attachments[name] = &storagev1.VolumeAttachment{Status: storagev1.VolumeAttachmentStatus{
			Attached: true, AttachmentMetadata: map[string]string{"lun": "3"}}}
		api.mu.Unlock()
	}()
	if _, err := p.SetUp(context.Background(), testPod("a"), pvSpec("vol1"), volumeDir(root, "a", "pv-vol1")); err != nil {
		t.Fatal(err)
	}
	pub := fn.reqs[0].(*csipb.NodePublishVolumeRequest)
	if pub.PublishContext["lun"] != "3" {
		t.Fatalf("publish context = %v, want the attachment's metadata", pub.PublishContext)
	}
	data, err := readVolData(volumeDir(root, "a", "pv-vol1"))
	if err != nil || data.AttachmentID != name || data.SpecVolID != "pv-vol1" {
		t.Fatalf("vol_data.json = %+v, %v", data, err)
	}

	p.attachTimeout = 1500 * time.Millisecond
	_, err = p.SetUp(context.Background(), testPod("b"), pvSpec("vol2"), volumeDir(root, "b", "pv-vol2"))
	if err == nil || !strings.Contains(err.Error(), "attacher.WaitForAttach failed") {
		t.Fatalf("SetUp without an attachment: %v", err)
	}
}

func TestSetUpOfAnUnregisteredDriverFailsWithUpstreamsMessage(t *testing.T) {
	p := NewPlugin(shortDir(t), "node-1", NewDrivers(), noAttach(nil), mounttest.New())
	_, err := p.SetUp(context.Background(), testPod("a"), pvSpec("vol1"), filepath.Join(p.rootDir, "x"))
	want := "driver name fake.csi not found in the list of registered CSI drivers"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	// Tearing down a volume that never reached the driver just removes its directory.
	dir := filepath.Join(p.rootDir, "pods", "a", "volumes", PluginName, "v")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := p.TearDown(context.Background(), "a", dir); err != nil {
		t.Fatal(err)
	}
}

func TestInlineVolumeNeedsTheEphemeralModeAndIsNotStaged(t *testing.T) {
	inline := &volumes.Spec{Volume: &v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: fakeDriver}}}}
	p, _, root := newTestPlugin(t, true, noAttach(nil))
	_, err := p.SetUp(context.Background(), testPod("a"), inline, volumeDir(root, "a", "scratch"))
	if err == nil || !strings.Contains(err.Error(), `volume mode "Ephemeral" not supported by driver fake.csi`) {
		t.Fatalf("err = %v", err)
	}

	ephemeral := noAttach(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	})
	p, fn, root := newTestPlugin(t, true, ephemeral)
	dir := volumeDir(root, "a", "scratch")
	if _, err := p.SetUp(context.Background(), testPod("a"), inline, dir); err != nil {
		t.Fatal(err)
	}
	handle := ephemeralHandle("a", "scratch")
	if got := fn.called(); !slices.Equal(got, []string{"Publish " + handle + " " + filepath.Join(dir, "mount")}) {
		t.Fatalf("calls = %q, want one publish and no staging", got)
	}
	if ctx := fn.reqs[0].(*csipb.NodePublishVolumeRequest).VolumeContext; ctx["csi.storage.k8s.io/ephemeral"] != "true" {
		t.Fatalf("volume context = %v", ctx)
	}
	if err := p.TearDown(context.Background(), "a", dir); err != nil {
		t.Fatal(err)
	}
	if got := fn.called(); len(got) != 2 || !strings.HasPrefix(got[1], "Unpublish ") {
		t.Fatalf("calls = %q, want an unpublish and no unstage", got)
	}
}

func TestFSGroupIsAppliedUnderTheFilePolicy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group needs root")
	}
	api := noAttach(func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = ptr.To(storagev1.FileFSGroupPolicy) })
	p, _, root := newTestPlugin(t, false, api)
	pod := testPod("a")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](4242)}
	m, err := p.SetUp(context.Background(), pod, pvSpec("vol1"), volumeDir(root, "a", "pv-vol1"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	if gid := st.Sys().(*syscall.Stat_t).Gid; gid != 4242 || st.Mode()&os.ModeSetgid == 0 || st.Mode().Perm()&0o070 != 0o070 {
		t.Fatalf("target: group %d, mode %v; want group 4242, setgid, group rwx", gid, st.Mode())
	}
}

func TestFSGroupIsDelegatedToADriverWithVolumeMountGroup(t *testing.T) {
	// The File policy would have nodelet change the group; the driver takes it instead.
	api := noAttach(func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = ptr.To(storagev1.FileFSGroupPolicy) })
	p, fn, root := newTestPluginOver(t, &fakeNode{stage: true, mountGroup: true}, api)
	pod := testPod("a")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](4242)}
	m, err := p.SetUp(context.Background(), pod, pvSpec("vol1"), volumeDir(root, "a", "pv-vol1"))
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, r := range fn.reqs {
		switch r := r.(type) {
		case *csipb.NodeStageVolumeRequest:
			groups = append(groups, "stage:"+r.GetVolumeCapability().GetMount().GetVolumeMountGroup())
		case *csipb.NodePublishVolumeRequest:
			groups = append(groups, "publish:"+r.GetVolumeCapability().GetMount().GetVolumeMountGroup())
		}
	}
	if want := []string{"stage:4242", "publish:4242"}; !slices.Equal(groups, want) {
		t.Fatalf("volume_mount_group in the calls: %v, want %v", groups, want)
	}
	st, err := os.Stat(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	if gid := st.Sys().(*syscall.Stat_t).Gid; gid == 4242 || st.Mode()&os.ModeSetgid != 0 {
		t.Fatalf("nodelet changed the target's ownership (group %d, mode %v) although the driver applies fsGroup", gid, st.Mode())
	}

	// Without an fsGroup there is nothing to delegate.
	before := len(fn.reqs)
	other := testPod("b")
	if _, err := p.SetUp(context.Background(), other, pvSpec("vol2"), volumeDir(root, "b", "pv-vol2")); err != nil {
		t.Fatal(err)
	}
	for _, r := range fn.reqs[before:] {
		if r, ok := r.(*csipb.NodePublishVolumeRequest); ok && r.GetVolumeCapability().GetMount().GetVolumeMountGroup() != "" {
			t.Fatalf("publish without an fsGroup carried volume_mount_group %q", r.GetVolumeCapability().GetMount().GetVolumeMountGroup())
		}
	}
}

func TestAppliesFSGroupFollowsThePolicy(t *testing.T) {
	rwo := source{fsType: "ext4", accessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}}
	rwx := source{fsType: "ext4", accessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}}
	noFS := source{accessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}}
	driver := func(p storagev1.FSGroupPolicy) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{FSGroupPolicy: &p}}
	}
	for _, tc := range []struct {
		name string
		src  source
		drv  *storagev1.CSIDriver
		want bool
	}{
		{"default, RWO with fsType", rwo, nil, true},
		{"default, RWX", rwx, nil, false},
		{"default, no fsType", noFS, nil, false},
		{"File, RWX", rwx, driver(storagev1.FileFSGroupPolicy), true},
		{"None, RWO", rwo, driver(storagev1.NoneFSGroupPolicy), false},
	} {
		if got := tc.src.appliesFSGroup(tc.drv); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBlockVolumeIsPublishedAsADevice(t *testing.T) {
	p, fn, root := newTestPlugin(t, true, noAttach(nil))
	spec := pvSpec("vol1")
	spec.PV.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
	dir := volumeDir(root, "a", "pv-vol1")
	m, err := p.SetUp(context.Background(), testPod("a"), spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Block || m.Path != filepath.Join(dir, "dev") {
		t.Fatalf("mount = %+v, want the device file dir/dev", m)
	}
	for _, req := range fn.reqs {
		var c *csipb.VolumeCapability
		switch r := req.(type) {
		case *csipb.NodeStageVolumeRequest:
			c = r.VolumeCapability
		case *csipb.NodePublishVolumeRequest:
			c = r.VolumeCapability
		}
		if c.GetBlock() == nil || c.GetMount() != nil {
			t.Fatalf("%T capability = %v, want block access", req, c)
		}
	}
	if err := p.TearDown(context.Background(), "a", dir); err != nil {
		t.Fatal(err)
	}
	if got := fn.called(); len(got) != 4 || got[2] != "Unpublish vol1 "+filepath.Join(dir, "dev") {
		t.Fatalf("calls = %q", got)
	}
}

// A driver that asks for tokens gets them in the volume context; one that requires
// republishing is published again at every sync of a mounted volume, the others are not.
func TestTokensAndRepublish(t *testing.T) {
	api := noAttach(func(s *storagev1.CSIDriverSpec) {
		s.RequiresRepublish = ptr.To(true)
		s.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
	})
	p, fn, root := newTestPlugin(t, true, api)
	pod := testPod("a")
	pod.Spec.ServiceAccountName = "builder"
	dir := volumeDir(root, "a", "pv-vol1")
	spec := pvSpec("vol1")
	for range 2 {
		if _, err := p.SetUp(context.Background(), pod, spec, dir); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Stage vol1 " + p.stagingPath(fakeDriver, "vol1"), "Publish vol1 " + filepath.Join(dir, "mount"), "Publish vol1 " + filepath.Join(dir, "mount")}
	if got := fn.called(); !slices.Equal(got, want) {
		t.Fatalf("calls = %q, want %q (published again, not staged again)", got, want)
	}
	vc := fn.reqs[1].(*csipb.NodePublishVolumeRequest).VolumeContext
	if !strings.Contains(vc[tokensKey], `"vault":{"token":"token-for-ns/builder@vault"`) {
		t.Fatalf("tokens = %q", vc[tokensKey])
	}
	if attrs := spec.PV.Spec.CSI.VolumeAttributes; len(attrs) != 1 {
		t.Fatalf("the PV's attributes were changed: %v", attrs)
	}
}
