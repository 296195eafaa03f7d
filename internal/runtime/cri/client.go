// Package cri is nodelet's client of the Container Runtime Interface: it dials the runtime's
// socket and gives every call a deadline (one request timeout for calls that do work, a short
// one for lists and status). It is the only production package that speaks the CRI API; the
// pod runtime (internal/runtime/kuberuntime) builds its requests, and other packages reach the runtime's
// stats, streaming URLs, exec and exit events through the Client's methods.
package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// DefaultRequestTimeout bounds CRI calls that do work (create, start, pull ...).
	DefaultRequestTimeout = 2 * time.Minute
	// StatusTimeout bounds cheap read-only calls (status, list, version, image look-ups) so a
	// wedged runtime shows up quickly in relists and health checks.
	StatusTimeout = 10 * time.Second
)

// Client wraps the CRI runtime and image services so that every call carries a deadline.
type Client struct {
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
	timeout time.Duration // for calls that do work
	// conn and imgConn are the connections Connect dialled (imgConn is conn unless the image
	// service has its own socket); nil for a Client over given service clients.
	conn, imgConn *grpc.ClientConn
}

// New returns a Client over already dialled services; requestTimeout <= 0 means
// DefaultRequestTimeout.
func New(rt runtimeapi.RuntimeServiceClient, img runtimeapi.ImageServiceClient, requestTimeout time.Duration) *Client {
	if requestTimeout <= 0 {
		requestTimeout = DefaultRequestTimeout
	}
	return &Client{rt: rt, img: img, timeout: requestTimeout}
}

// Connect dials endpoint (and imageEndpoint, when it names another socket) and returns a
// Client over them; requestTimeout <= 0 means DefaultRequestTimeout.
func Connect(endpoint, imageEndpoint string, requestTimeout time.Duration) (*Client, error) {
	if endpoint == "" {
		return nil, errors.New("no CRI endpoint")
	}
	conn, err := dial(endpoint)
	if err != nil {
		return nil, err
	}
	imgConn := conn
	if imageEndpoint != "" && imageEndpoint != endpoint {
		if imgConn, err = dial(imageEndpoint); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("image service: %w", err)
		}
	}
	c := New(runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(imgConn), requestTimeout)
	c.conn, c.imgConn = conn, imgConn
	return c, nil
}

// Close closes the connections Connect dialled.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	if c.imgConn != c.conn {
		_ = c.imgConn.Close()
	}
	return c.conn.Close()
}

// IsNotFound says whether err is the runtime's NotFound.
func IsNotFound(err error) bool {
	return status.Code(err) == codes.NotFound
}

func (c *Client) short(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, min(StatusTimeout, c.timeout))
}

func (c *Client) long(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

func (c *Client) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	return c.rt.Version(ctx, &runtimeapi.VersionRequest{})
}

func (c *Client) Status(ctx context.Context) (*runtimeapi.StatusResponse, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	return c.rt.Status(ctx, &runtimeapi.StatusRequest{})
}

// RuntimeConfig is the runtime's own configuration (its cgroup driver); runtimes older than
// the call answer Unimplemented.
func (c *Client) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	return c.rt.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
}

func (c *Client) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	ctx, cancel := c.long(ctx)
	defer cancel()
	resp, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
	if err != nil {
		return "", err
	}
	return resp.PodSandboxId, nil
}

func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return err
}

func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return err
}

func (c *Client) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, err
	}
	return resp.Status, nil
}

func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return resp.Items, nil
}

func (c *Client) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
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

func (c *Client) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return err
}

// stopContainer gives the runtime graceSeconds before it kills, plus the usual request time.
func (c *Client) StopContainer(ctx context.Context, id string, graceSeconds int64) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+time.Duration(graceSeconds)*time.Second)
	defer cancel()
	_, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: graceSeconds})
	return err
}

func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return err
}

func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, err
	}
	return resp.Containers, nil
}

func (c *Client) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, err
	}
	return resp.Status, nil
}

func (c *Client) ReopenContainerLog(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return err
}

func (c *Client) UpdateContainerResources(ctx context.Context, id string, r *runtimeapi.LinuxContainerResources) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: r})
	return err
}

// CheckpointContainer asks the runtime to checkpoint a container into req.Location. As
// upstream's CRI client, a requested timeout (seconds) longer than the request timeout is the
// call's deadline; a shorter one is raised to it.
func (c *Client) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	if req.Timeout < 0 {
		return errors.New("CheckpointContainer requires the timeout value to be > 0")
	}
	deadline := c.timeout
	if requested := time.Duration(req.Timeout) * time.Second; requested > deadline {
		deadline = requested
	} else {
		req.Timeout = int64(c.timeout / time.Second)
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	_, err := c.rt.CheckpointContainer(ctx, req)
	return err
}
