package cri

import (
	"context"
	"encoding/json"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StatsProvider is the CRI side of /stats/summary and the resource metrics. Every method is a
// single CRI call whatever the number of pods. *Client implements it.
//
// ListPodSandboxStats is deliberately not used: containerd 1.6 fails the whole call
// ("cgroupPath is empty") for sandboxes created without a cgroup parent, which is how nodelet
// creates them, so pod network figures come from the sandbox's network namespace instead.
type StatsProvider interface {
	// ListContainerStats returns usage for every container the runtime holds (all pods, all
	// states); only running containers carry cpu and memory.
	ListContainerStats(ctx context.Context) ([]*runtimeapi.ContainerStats, error)
	// ImageFsInfo reports the filesystems holding images and container writable layers.
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
	// SandboxPID returns the pid of the sandbox's infra process (whose /proc/<pid>/net/dev
	// shows the pod's network), or 0 when the sandbox has no running process.
	SandboxPID(ctx context.Context, sandboxID string) (int, error)
}

var _ StatsProvider = (*Client)(nil)

// ListContainerStats implements StatsProvider.
func (c *Client) ListContainerStats(ctx context.Context) ([]*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{}})
	if err != nil {
		return nil, fmt.Errorf("list container stats: %w", err)
	}
	return resp.Stats, nil
}

// SandboxPID implements StatsProvider from the verbose sandbox status, whose "info" entry is
// JSON carrying the pid (containerd and CRI-O both report it there).
func (c *Client) SandboxPID(ctx context.Context, sandboxID string) (int, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID, Verbose: true})
	if err != nil {
		return 0, fmt.Errorf("sandbox %s status: %w", sandboxID, err)
	}
	raw, ok := resp.GetInfo()["info"]
	if !ok {
		return 0, nil
	}
	var info struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(raw), &info); err != nil {
		return 0, fmt.Errorf("sandbox %s info: %w", sandboxID, err)
	}
	return info.PID, nil
}
