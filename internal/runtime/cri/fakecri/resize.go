package fakecri

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UpdateContainerResources replaces a created or running container's Linux resources, as
// containerd does; the container's Config shows them afterwards.
func (f *Fake) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", c.ID)
	}
	cfg := cloneContainerConfig(c.Config)
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	res := &runtimeapi.LinuxContainerResources{}
	if b, err := req.GetLinux().Marshal(); err == nil {
		_ = res.Unmarshal(b)
	}
	cfg.Linux.Resources = res
	c.Config = cfg
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}
