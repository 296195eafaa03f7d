// Package csi is nodelet's side of the Container Storage Interface: driver registration, the
// node's CSINode object, and CSI volume set-up through the drivers' node service.
//
// It registers CSI drivers that announce themselves in the plugins_registry directory (as
// node-driver-registrar does), keeps the node's CSINode object listing them, and sets up CSI
// volumes — PersistentVolumes with a csi source and inline ephemeral ones — through the drivers'
// node service: stage once per node, publish once per pod, and the reverse when the pods are gone.
package csi

import (
	"context"
	"fmt"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// callTimeout bounds one call to a driver, as upstream's csiTimeout.
const callTimeout = 2 * time.Minute

// nodeClient is one connection to a driver's node service.
type nodeClient struct {
	conn *grpc.ClientConn
	node csipb.NodeClient
}

// dial connects to a driver's unix socket; the connection comes up lazily.
func dial(endpoint string) (*nodeClient, error) {
	conn, err := grpc.NewClient("unix://"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connecting to CSI driver at %s: %w", endpoint, err)
	}
	return &nodeClient{conn: conn, node: csipb.NewNodeClient(conn)}, nil
}

func (c *nodeClient) close() { _ = c.conn.Close() }

// nodeInfo is what NodeGetInfo tells about this node.
type nodeInfo struct {
	nodeID     string
	maxVolumes int64
	topology   map[string]string
}

func (c *nodeClient) getInfo(ctx context.Context) (nodeInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return nodeInfo{}, err
	}
	info := nodeInfo{nodeID: resp.GetNodeId(), maxVolumes: resp.GetMaxVolumesPerNode()}
	if t := resp.GetAccessibleTopology(); t != nil {
		info.topology = t.GetSegments()
	}
	if info.nodeID == "" {
		return nodeInfo{}, fmt.Errorf("NodeGetInfo returned an empty node id")
	}
	return info, nil
}

// capabilities lists the node service's RPC capabilities.
func (c *nodeClient) capabilities(ctx context.Context) (map[csipb.NodeServiceCapability_RPC_Type]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return nil, err
	}
	caps := map[csipb.NodeServiceCapability_RPC_Type]bool{}
	for _, c := range resp.GetCapabilities() {
		if rpc := c.GetRpc(); rpc != nil {
			caps[rpc.GetType()] = true
		}
	}
	return caps, nil
}

func (c *nodeClient) stage(ctx context.Context, req *csipb.NodeStageVolumeRequest) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.node.NodeStageVolume(ctx, req)
	return err
}

func (c *nodeClient) unstage(ctx context.Context, volumeID, stagingPath string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: stagingPath})
	return err
}

func (c *nodeClient) publish(ctx context.Context, req *csipb.NodePublishVolumeRequest) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.node.NodePublishVolume(ctx, req)
	return err
}

func (c *nodeClient) unpublish(ctx context.Context, volumeID, targetPath string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: targetPath})
	return err
}

// VolumeUsage is what NodeGetVolumeStats reports for one volume; a field the driver does not
// report is nil.
type VolumeUsage struct {
	CapacityBytes, AvailableBytes, UsedBytes *int64
	Inodes, InodesFree, InodesUsed           *int64
	// Abnormal and Message are the driver's volume condition, when it reports one.
	Abnormal bool
	Message  string
}

func (c *nodeClient) volumeStats(ctx context.Context, volumeID, volumePath, stagingPath string) (VolumeUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := c.node.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{
		VolumeId: volumeID, VolumePath: volumePath, StagingTargetPath: stagingPath,
	})
	if err != nil {
		return VolumeUsage{}, err
	}
	var u VolumeUsage
	for _, usage := range resp.GetUsage() {
		total, avail, used := usage.GetTotal(), usage.GetAvailable(), usage.GetUsed()
		switch usage.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			u.CapacityBytes, u.AvailableBytes, u.UsedBytes = &total, &avail, &used
		case csipb.VolumeUsage_INODES:
			u.Inodes, u.InodesFree, u.InodesUsed = &total, &avail, &used
		}
	}
	if cond := resp.GetVolumeCondition(); cond != nil {
		u.Abnormal, u.Message = cond.GetAbnormal(), cond.GetMessage()
	}
	return u, nil
}

func (c *nodeClient) expand(ctx context.Context, req *csipb.NodeExpandVolumeRequest) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.node.NodeExpandVolume(ctx, req)
	return err
}
