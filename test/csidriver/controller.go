package main

import (
	"context"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// controller creates and deletes the volumes' directories; the sidecars in sidecars.go call
// the same functions directly.
type controller struct {
	csipb.UnimplementedControllerServer
	dataDir string
}

func (c controller) ControllerGetCapabilities(context.Context, *csipb.ControllerGetCapabilitiesRequest) (*csipb.ControllerGetCapabilitiesResponse, error) {
	return &csipb.ControllerGetCapabilitiesResponse{Capabilities: []*csipb.ControllerServiceCapability{{
		Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}},
	}}}, nil
}

func (c controller) CreateVolume(_ context.Context, req *csipb.CreateVolumeRequest) (*csipb.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := createVolume(c.dataDir, req.GetName()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: req.GetName(), CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}}, nil
}

func (c controller) DeleteVolume(_ context.Context, req *csipb.DeleteVolumeRequest) (*csipb.DeleteVolumeResponse, error) {
	if err := deleteVolume(c.dataDir, req.GetVolumeId()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.DeleteVolumeResponse{}, nil
}

// createVolume makes the volume's directory, writable by any user as a fresh disk's root
// would be for its owner.
func createVolume(dataDir, id string) error {
	dir := filepath.Join(dataDir, id)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	return os.Chmod(dir, 0o777)
}

func deleteVolume(dataDir, id string) error {
	if id == "" || filepath.Base(id) != id {
		return status.Errorf(codes.InvalidArgument, "bad volume id %q", id)
	}
	if _, err := os.Stat(imagePath(dataDir, id)); err == nil {
		_ = detachLoop(dataDir, id) // an unstaged driver attaches at publish
	}
	if err := os.Remove(imagePath(dataDir, id)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.RemoveAll(filepath.Join(dataDir, id))
}
