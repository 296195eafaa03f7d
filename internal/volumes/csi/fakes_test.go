package csi

import (
	"context"
	"net"
	"os"
	"slices"
	"sync"
	"testing"

	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/nodelet/nodelet/internal/testutil"
	"github.com/nodelet/nodelet/internal/volumes/mount/mounttest"
	"google.golang.org/grpc"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// fakeNode is a CSI node service that records its calls and "mounts" in a fakeMounter.
type fakeNode struct {
	csipb.UnimplementedNodeServer
	mounter *mounttest.Fake
	stage   bool
	// mountGroup advertises VOLUME_MOUNT_GROUP: the driver applies fsGroup itself.
	mountGroup bool

	mu    sync.Mutex
	calls []string // "Method volumeID path"
	reqs  []any
}

func (n *fakeNode) record(method, id, path string, req any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, method+" "+id+" "+path)
	n.reqs = append(n.reqs, req)
}

func (n *fakeNode) called() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls)
}

func (n *fakeNode) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: "node-1", MaxVolumesPerNode: 7,
		AccessibleTopology: &csipb.Topology{Segments: map[string]string{"topology.fake/zone": "z1"}}}, nil
}

func (n *fakeNode) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	resp := &csipb.NodeGetCapabilitiesResponse{}
	add := func(t csipb.NodeServiceCapability_RPC_Type) {
		resp.Capabilities = append(resp.Capabilities, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{
			Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}})
	}
	if n.stage {
		add(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	}
	if n.mountGroup {
		add(csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	}
	return resp, nil
}

func (n *fakeNode) NodeStageVolume(_ context.Context, r *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	n.record("Stage", r.VolumeId, r.StagingTargetPath, r)
	n.mounter.Mount(r.StagingTargetPath)
	return &csipb.NodeStageVolumeResponse{}, nil
}

func (n *fakeNode) NodeUnstageVolume(_ context.Context, r *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	n.record("Unstage", r.VolumeId, r.StagingTargetPath, r)
	_ = n.mounter.Unmount(r.StagingTargetPath)
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

func (n *fakeNode) NodePublishVolume(_ context.Context, r *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	n.record("Publish", r.VolumeId, r.TargetPath, r)
	if err := os.MkdirAll(r.TargetPath, 0o750); err != nil {
		return nil, err
	}
	n.mounter.Mount(r.TargetPath)
	return &csipb.NodePublishVolumeResponse{}, nil
}

func (n *fakeNode) NodeUnpublishVolume(_ context.Context, r *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	n.record("Unpublish", r.VolumeId, r.TargetPath, r)
	_ = n.mounter.Unmount(r.TargetPath)
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// fakeRegistration is a plugin's registration service.
type fakeRegistration struct {
	info     registerapi.PluginInfo
	statuses chan *registerapi.RegistrationStatus
}

func (r *fakeRegistration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	info := r.info
	return &info, nil
}

func (r *fakeRegistration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	select { // a refused plugin is told again at every retry; the test reads the first
	case r.statuses <- s:
	default:
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// serveUnix serves register's services on a unix socket at path until the test ends; the
// returned func stops the server early (its socket goes with it).
func serveUnix(t *testing.T, path string, register func(*grpc.Server)) func() {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return s.Stop
}

// shortDir is a temporary directory with a path short enough for unix sockets.
func shortDir(t *testing.T) string { return testutil.ShortDir(t, "csi") }

// fakeAPI serves CSIDrivers, VolumeAttachments and Secrets from maps.
type fakeAPI struct {
	mu          sync.Mutex
	drivers     map[string]*storagev1.CSIDriver
	attachments map[string]*storagev1.VolumeAttachment
	secrets     map[string]*v1.Secret
}

func (f *fakeAPI) CSIDriver(_ context.Context, name string) (*storagev1.CSIDriver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drivers[name], nil
}

func (f *fakeAPI) VolumeAttachment(_ context.Context, name string) (*storagev1.VolumeAttachment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if va, ok := f.attachments[name]; ok {
		return va.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}, name)
}

func (f *fakeAPI) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f *fakeAPI) CreateServiceAccountToken(_ context.Context, ns, sa string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	out := req.DeepCopy()
	out.Status.Token = "token-for-" + ns + "/" + sa + "@" + strings.Join(req.Spec.Audiences, ",")
	return out, nil
}
