package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// node is the driver's node service: a volume is <data-dir>/<volume id>, bind-mounted to
// the staging path and from there (or directly, unstaged) to each target path.
type node struct {
	csipb.UnimplementedNodeServer
	o     options
	calls *callLog
}

func (n *node) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{
		NodeId: n.o.nodeID, MaxVolumesPerNode: n.o.maxVolumes,
		AccessibleTopology: &csipb.Topology{Segments: map[string]string{topologyKey(n.o.name): n.o.nodeID}},
	}, nil
}

func topologyKey(driver string) string { return "topology." + driver + "/node" }

func (n *node) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	types := []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME}
	if n.o.stage {
		types = append(types, csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	}
	if n.o.mountGroup {
		types = append(types, csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	}
	var caps []*csipb.NodeServiceCapability
	for _, t := range types {
		caps = append(caps, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}})
	}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (n *node) NodeStageVolume(_ context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	n.calls.record("NodeStageVolume", req.GetVolumeId(), req.GetStagingTargetPath(), req.GetVolumeContext(), mountGroup(req.GetVolumeCapability()))
	if req.GetVolumeId() == "" || req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id and staging path are required")
	}
	if isBlock(req.GetVolumeCapability()) {
		if err := stageBlock(n.o.dataDir, req.GetVolumeId(), req.GetStagingTargetPath()); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csipb.NodeStageVolumeResponse{}, nil
	}
	src := filepath.Join(n.o.dataDir, req.GetVolumeId())
	if _, err := os.Stat(src); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetVolumeId(), err)
	}
	if err := bindMount(src, req.GetStagingTargetPath(), false); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := n.applyMountGroup(req.GetStagingTargetPath(), req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	return &csipb.NodeStageVolumeResponse{}, nil
}

func (n *node) NodeUnstageVolume(_ context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	n.calls.record("NodeUnstageVolume", req.GetVolumeId(), req.GetStagingTargetPath(), nil, "")
	if err := unmount(req.GetStagingTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := unstageBlock(n.o.dataDir, req.GetVolumeId(), req.GetStagingTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

func (n *node) NodePublishVolume(_ context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	n.calls.record("NodePublishVolume", req.GetVolumeId(), req.GetTargetPath(), req.GetVolumeContext(), mountGroup(req.GetVolumeCapability()))
	if req.GetVolumeId() == "" || req.GetTargetPath() == "" || req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume id, target path and capability are required")
	}
	if isBlock(req.GetVolumeCapability()) {
		staging := ""
		if n.o.stage {
			staging = req.GetStagingTargetPath()
		}
		if err := publishBlock(n.o.dataDir, req.GetVolumeId(), staging, req.GetTargetPath(), req.GetReadonly()); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csipb.NodePublishVolumeResponse{}, nil
	}
	src := filepath.Join(n.o.dataDir, req.GetVolumeId())
	switch {
	case req.GetVolumeContext()["csi.storage.k8s.io/ephemeral"] == "true":
		// An inline volume lives as long as its pod: made here, removed at unpublish.
		if err := os.MkdirAll(src, 0o777); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if err := os.WriteFile(ephemeralMarker(n.o.dataDir, req.GetVolumeId()), nil, 0o644); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	case n.o.stage:
		if req.GetStagingTargetPath() == "" {
			return nil, status.Error(codes.FailedPrecondition, "the volume is not staged")
		}
		src = req.GetStagingTargetPath()
	}
	if _, err := os.Stat(src); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetVolumeId(), err)
	}
	if err := bindMount(src, req.GetTargetPath(), req.GetReadonly()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if !req.GetReadonly() {
		if err := n.applyMountGroup(req.GetTargetPath(), req.GetVolumeCapability()); err != nil {
			return nil, err
		}
	}
	return &csipb.NodePublishVolumeResponse{}, nil
}

func (n *node) NodeUnpublishVolume(_ context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	n.calls.record("NodeUnpublishVolume", req.GetVolumeId(), req.GetTargetPath(), nil, "")
	if err := unmount(req.GetTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(req.GetTargetPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	marker := ephemeralMarker(n.o.dataDir, req.GetVolumeId())
	if _, err := os.Stat(marker); err == nil {
		_ = os.RemoveAll(filepath.Join(n.o.dataDir, req.GetVolumeId()))
		_ = os.Remove(marker)
	}
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

func mountGroup(c *csipb.VolumeCapability) string { return c.GetMount().GetVolumeMountGroup() }

// applyMountGroup gives dir's files the group a VOLUME_MOUNT_GROUP request names (group
// writable, directories setgid), as a filesystem's gid= mount option would; a driver without
// the capability refuses such a request, as the CSI spec asks.
func (n *node) applyMountGroup(dir string, c *csipb.VolumeCapability) error {
	group := mountGroup(c)
	if group == "" {
		return nil
	}
	if !n.o.mountGroup {
		return status.Error(codes.InvalidArgument, "volume_mount_group given but VOLUME_MOUNT_GROUP is not advertised")
	}
	gid, err := strconv.Atoi(group)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "volume_mount_group %q: %v", group, err)
	}
	err = filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil || e.Type()&os.ModeSymlink != 0 {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() | 0o060
		if e.IsDir() {
			mode |= 0o010 | os.ModeSetgid
		}
		return os.Chmod(path, mode)
	})
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// NodeExpandVolume has nothing to grow (a volume is a directory); it checks the volume is
// published where the kubelet says and logs the size asked for.
func (n *node) NodeExpandVolume(_ context.Context, req *csipb.NodeExpandVolumeRequest) (*csipb.NodeExpandVolumeResponse, error) {
	n.calls.record("NodeExpandVolume", req.GetVolumeId(), req.GetVolumePath(), map[string]string{
		"requiredBytes": strconv.FormatInt(req.GetCapacityRange().GetRequiredBytes(), 10)}, "")
	if !mounted(req.GetVolumePath()) {
		return nil, status.Errorf(codes.NotFound, "volume %s is not published at %s", req.GetVolumeId(), req.GetVolumePath())
	}
	return &csipb.NodeExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}, nil
}

func ephemeralMarker(dataDir, id string) string { return filepath.Join(dataDir, "."+id+".ephemeral") }

func (n *node) NodeGetVolumeStats(_ context.Context, req *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(req.GetVolumePath(), &st); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume path %s: %v", req.GetVolumePath(), err)
	}
	bsize := st.Bsize
	used, err := du(req.GetVolumePath())
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodeGetVolumeStatsResponse{Usage: []*csipb.VolumeUsage{
		{Unit: csipb.VolumeUsage_BYTES, Total: int64(st.Blocks) * bsize, Available: int64(st.Bavail) * bsize, Used: used},
		{Unit: csipb.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}

// du sums the sizes of the files below dir: what the volume itself holds.
func du(dir string) (int64, error) {
	var total int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil {
			total += info.Size()
		}
		return err
	})
	return total, err
}

// bindMount mounts src on target (made when missing) unless something is mounted there.
func bindMount(src, target string, readOnly bool) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return err
	}
	if mounted(target) {
		return nil
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	if readOnly {
		return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}
	return nil
}

func unmount(target string) error {
	if !mounted(target) {
		return nil
	}
	return unix.Unmount(target, 0)
}

// mounted compares the device of path and its parent; a bind mount of a directory of the
// same filesystem keeps the device, so the mount table decides.
func mounted(path string) bool {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	clean := filepath.Clean(path)
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[4] == clean {
			return true
		}
	}
	return false
}

// callLog appends one JSON line per node call; stage and publish calls say whether the Node
// listed the volume in volumesInUse at the time (when inUse can read it).
type callLog struct {
	mu    sync.Mutex
	f     *os.File
	inUse *inUseChecker
}

func openCalls(path string) (*callLog, error) {
	if path == "" {
		return &callLog{}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &callLog{f: f}, nil
}

func (c *callLog) record(method, volumeID, path string, volumeContext map[string]string, mountGroup string) {
	klog.V(2).InfoS(method, "volume", volumeID, "path", path)
	if c.f == nil {
		return
	}
	entry := map[string]any{"time": time.Now().Format(time.RFC3339Nano), "method": method, "volumeID": volumeID, "path": path, "context": volumeContext, "mountGroup": mountGroup}
	if c.inUse != nil && (method == "NodeStageVolume" || method == "NodePublishVolume") {
		entry["listedInUse"] = c.inUse.listed(volumeID)
	}
	b, _ := json.Marshal(entry)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.f.Write(append(b, '\n'))
}
