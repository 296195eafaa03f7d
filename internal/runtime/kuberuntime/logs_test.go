package kuberuntime

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/images"
)

func TestContainerLogAndRunningContainerLogs(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("web", ctr("app", "sleep", "1d"), ctr("side", "sleep", "1d"))
	pod.Spec.NodeName = "node-1"
	e.sync(pod)
	e.exit("side", 0)
	other := newPod("elsewhere", ctr("x", "sleep", "1d"))
	other.Spec.NodeName = "node-2" // another nodelet's pod on the shared runtime: not ours to rotate
	e.sync(other)
	app := e.running("app")
	ctx := context.Background()

	got, err := e.mgr.ContainerLog(ctx, app.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContainerID != app.ID || got.Path != app.LogPath || got.Path == "" || got.State != container.StateRunning {
		t.Errorf("ContainerLog = %+v, want id %s path %s running", got, app.ID, app.LogPath)
	}
	if _, err := e.mgr.ContainerLog(ctx, "gone"); !errors.Is(err, container.ErrContainerNotFound) {
		t.Errorf("ContainerLog(gone) err = %v, want ErrContainerNotFound", err)
	}

	running, err := e.mgr.RunningContainerLogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(running) != 1 || running[0].ContainerID != app.ID || running[0].Path != app.LogPath {
		t.Errorf("RunningContainerLogs = %+v, want only app", running)
	}
}

// reopenClient answers ReopenContainerLog itself; the fake CRI does not implement it.
type reopenClient struct {
	runtimeapi.RuntimeServiceClient
	reopened []string
	err      error
}

func (c *reopenClient) ReopenContainerLog(_ context.Context, req *runtimeapi.ReopenContainerLogRequest, _ ...grpc.CallOption) (*runtimeapi.ReopenContainerLogResponse, error) {
	c.reopened = append(c.reopened, req.ContainerId)
	if c.err != nil {
		return nil, c.err
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

func TestReopenContainerLog(t *testing.T) {
	client := &reopenClient{}
	m := newManager(cri.New(client, nil, 0), Options{Images: logsTestImages{}})
	ctx := context.Background()
	if err := m.ReopenContainerLog(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	client.err = status.Error(codes.NotFound, "no such container")
	if err := m.ReopenContainerLog(ctx, "c2"); !errors.Is(err, container.ErrContainerNotFound) {
		t.Errorf("err = %v, want ErrContainerNotFound", err)
	}
	client.err = status.Error(codes.FailedPrecondition, "container is not running")
	if err := m.ReopenContainerLog(ctx, "c3"); err == nil || errors.Is(err, container.ErrContainerNotFound) {
		t.Errorf("err = %v, want the runtime's error", err)
	}
	if len(client.reopened) != 3 || client.reopened[0] != "c1" {
		t.Errorf("reopened %v", client.reopened)
	}
}

// logsTestImages keeps newManager from building an image manager the test does not use.
type logsTestImages struct{}

func (logsTestImages) ForgetPod(types.UID) {}

func (logsTestImages) ImageUser(context.Context, string) (*int64, string, error) {
	return nil, "", nil
}

func (logsTestImages) EnsureImage(context.Context, *v1.Pod, *v1.Container, []v1.Secret, images.Sandbox) (string, string, string, error) {
	return "", "", "", nil
}

func (logsTestImages) EnsureVolumeImage(context.Context, *v1.Pod, *v1.ImageVolumeSource, []v1.Secret, images.Sandbox) (string, string, string, error) {
	return "", "", "", nil
}
