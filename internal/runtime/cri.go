package runtime

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/criconn"
)

const (
	// DefaultRequestTimeout bounds CRI calls that do work (create, start, pull ...).
	DefaultRequestTimeout = 2 * time.Minute
	// statusTimeout bounds cheap read-only calls (status, list, version) so a wedged runtime
	// shows up quickly in relists and health checks.
	statusTimeout = 10 * time.Second
)

// Dial connects to a CRI endpoint; see criconn.Dial.
func Dial(endpoint string) (*grpc.ClientConn, error) { return criconn.Dial(endpoint) }

// criClient wraps the CRI runtime service so that every call carries a deadline.
type criClient struct {
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
	timeout time.Duration // for calls that do work
}

func (c *criClient) short(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(statusTimeout, c.timeout))
}

func (c *criClient) long(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

func (c *criClient) version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	return c.rt.Version(ctx, &runtimeapi.VersionRequest{})
}

func (c *criClient) status(ctx context.Context) (*runtimeapi.StatusResponse, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	return c.rt.Status(ctx, &runtimeapi.StatusRequest{})
}

func (c *criClient) runPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	ctx, cancel := c.long(ctx)
	defer cancel()
	resp, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
	if err != nil {
		return "", err
	}
	return resp.PodSandboxId, nil
}

func (c *criClient) stopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return err
}

func (c *criClient) removePodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return err
}

func (c *criClient) podSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, err
	}
	return resp.Status, nil
}

func (c *criClient) listPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return resp.Items, nil
}

func (c *criClient) createContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := c.long(ctx)
	defer cancel()
	resp, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandboxID, Config: cfg, SandboxConfig: sbCfg,
	})
	if err != nil {
		return "", err
	}
	return resp.ContainerId, nil
}

func (c *criClient) startContainer(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return err
}

// stopContainer gives the runtime graceSeconds before it kills, plus the usual request time.
func (c *criClient) stopContainer(ctx context.Context, id string, graceSeconds int64) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+time.Duration(graceSeconds)*time.Second)
	defer cancel()
	_, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: graceSeconds})
	return err
}

func (c *criClient) removeContainer(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return err
}

func (c *criClient) listContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return resp.Containers, nil
}

func (c *criClient) containerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, err
	}
	return resp.Status, nil
}

// execSync runs cmd in a container, bounded by timeout on the runtime side and by timeout
// plus the request time here.
func (c *criClient) execSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+timeout)
	defer cancel()
	secs := int64((timeout + time.Second - 1) / time.Second)
	return c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
}

// imageUser returns the user an image runs as: its uid when numeric, else its user name.
func (c *criClient) imageUser(ctx context.Context, image string) (*int64, string, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return nil, "", err
	}
	if resp.GetImage() == nil {
		return nil, "", fmt.Errorf("image %s not present", image)
	}
	if uid := resp.GetImage().GetUid(); uid != nil {
		return &uid.Value, "", nil
	}
	return nil, resp.GetImage().GetUsername(), nil
}
