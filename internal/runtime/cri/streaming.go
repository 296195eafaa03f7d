package cri

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Streamer is the CRI streaming side of the runtime, used by the kubelet API's exec, attach,
// port-forward and run handlers. Exec, Attach and PortForward only ask the runtime for a
// URL on its streaming server; the caller proxies the client's connection there. *Client
// implements it.
type Streamer interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
	// ExecSync runs cmd in a running container and waits for it. timeout bounds the command
	// on the runtime side (0: none; the CRI deadline is then the request timeout). A
	// non-zero exit code is not an error: err is set only when the runtime call failed.
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}

var _ Streamer = (*Client)(nil)

// Exec asks the runtime for a streaming URL that runs req.Cmd in a container.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	resp, err := c.exec(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("exec in container %q: %w", req.ContainerId, err)
	}
	if resp.Url == "" {
		return nil, fmt.Errorf("exec in container %q: runtime returned no streaming URL", req.ContainerId)
	}
	return resp, nil
}

// Attach asks the runtime for a streaming URL attached to a container's main process.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	resp, err := c.attach(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("attach to container %q: %w", req.ContainerId, err)
	}
	if resp.Url == "" {
		return nil, fmt.Errorf("attach to container %q: runtime returned no streaming URL", req.ContainerId)
	}
	return resp, nil
}

// PortForward asks the runtime for a streaming URL that forwards ports into a sandbox's
// network namespace.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	resp, err := c.portForward(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("port-forward to sandbox %q: %w", req.PodSandboxId, err)
	}
	if resp.Url == "" {
		return nil, fmt.Errorf("port-forward to sandbox %q: runtime returned no streaming URL", req.PodSandboxId)
	}
	return resp, nil
}

// ExecSync runs cmd in a container and returns its output and exit code.
func (c *Client) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	resp, err := c.execSync(ctx, containerID, cmd, timeout)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("exec %q in container %q: %w", cmd, containerID, err)
	}
	return resp.Stdout, resp.Stderr, resp.ExitCode, nil
}

// The streaming calls only register a request with the runtime's streaming server, so they
// take the request timeout like any other call that does work.

func (c *Client) exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	ctx, cancel := c.long(ctx)
	defer cancel()
	return c.rt.Exec(ctx, req)
}

func (c *Client) attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	ctx, cancel := c.long(ctx)
	defer cancel()
	return c.rt.Attach(ctx, req)
}

func (c *Client) portForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	ctx, cancel := c.long(ctx)
	defer cancel()
	return c.rt.PortForward(ctx, req)
}

// execSync runs cmd in a container, bounded by timeout on the runtime side and by timeout
// plus the request time here.
func (c *Client) execSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+timeout)
	defer cancel()
	secs := int64((timeout + time.Second - 1) / time.Second)
	return c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
}
