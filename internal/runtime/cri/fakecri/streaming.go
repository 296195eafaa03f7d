package fakecri

import (
	"context"
	"net/url"
	"strconv"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultStreamingServer is the base of the URLs Exec, Attach and PortForward return until
// SetStreamingServer names a real one. Nothing listens there.
const DefaultStreamingServer = "http://streaming.fakecri.invalid"

// streamingState is a fake's streaming side. It lives beside Fake, keyed by the fake, so
// the streaming calls stay in this file.
type streamingState struct {
	mu       sync.Mutex
	base     string
	requests []any
	next     int
}

var streamingStates sync.Map // *Fake → *streamingState

func (f *Fake) streaming() *streamingState {
	v, _ := streamingStates.LoadOrStore(f, &streamingState{base: DefaultStreamingServer})
	return v.(*streamingState)
}

// SetStreamingServer sets the base URL ("http://127.0.0.1:1234") the streaming calls
// return URLs under, e.g. an httptest server standing in for the runtime's streaming server.
func (f *Fake) SetStreamingServer(base string) {
	s := f.streaming()
	s.mu.Lock()
	s.base = base
	s.mu.Unlock()
}

// StreamingRequests returns the Exec, Attach and PortForward requests received, in order
// (*runtimeapi.ExecRequest, *runtimeapi.AttachRequest, *runtimeapi.PortForwardRequest).
func (f *Fake) StreamingRequests() []any {
	s := f.streaming()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]any(nil), s.requests...)
}

// record keeps req (a copy the caller made) and returns a fresh URL "<base>/<kind>/token-<n>".
func (s *streamingState) record(kind string, req any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	s.next++
	u, _ := url.JoinPath(s.base, kind, "token-"+strconv.Itoa(s.next))
	return u
}

// runningContainer fails unless id names a running container, as containerd does.
func (f *Fake) runningContainer(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return notFound("container", id)
	}
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return status.Errorf(codes.FailedPrecondition, "container %q is in %s state", id, c.State)
	}
	return nil
}

// Exec returns a streaming URL for a running container.
func (f *Fake) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if len(req.Cmd) == 0 {
		return nil, status.Error(codes.InvalidArgument, "cmd must not be empty")
	}
	if req.Tty && req.Stderr {
		return nil, status.Error(codes.InvalidArgument, "tty and stderr cannot both be true")
	}
	if err := f.runningContainer(req.ContainerId); err != nil {
		return nil, err
	}
	return &runtimeapi.ExecResponse{Url: f.streaming().record("exec", &runtimeapi.ExecRequest{
		ContainerId: req.ContainerId, Cmd: append([]string(nil), req.Cmd...),
		Tty: req.Tty, Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr,
	})}, nil
}

// Attach returns a streaming URL for a running container.
func (f *Fake) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if req.Tty && req.Stderr {
		return nil, status.Error(codes.InvalidArgument, "tty and stderr cannot both be true")
	}
	if err := f.runningContainer(req.ContainerId); err != nil {
		return nil, err
	}
	return &runtimeapi.AttachResponse{Url: f.streaming().record("attach", &runtimeapi.AttachRequest{
		ContainerId: req.ContainerId, Tty: req.Tty, Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr,
	})}, nil
}

// PortForward returns a streaming URL for a ready sandbox.
func (f *Fake) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	f.mu.Lock()
	sb, ok := f.sandboxes[req.PodSandboxId]
	ready := ok && sb.State == runtimeapi.PodSandboxState_SANDBOX_READY
	f.mu.Unlock()
	if !ok {
		return nil, notFound("sandbox", req.PodSandboxId)
	}
	if !ready {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q is not ready", req.PodSandboxId)
	}
	return &runtimeapi.PortForwardResponse{Url: f.streaming().record("portforward", &runtimeapi.PortForwardRequest{
		PodSandboxId: req.PodSandboxId, Port: append([]int32(nil), req.Port...),
	})}, nil
}
