package memorymanager

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

var _ podhooks.Container = (*Manager)(nil)

// ApplyContainer is the memory manager's container hook: a new container's memory is pinned
// to the NUMA nodes the Static policy gave it (cpuset.mems), and the memory of the regular
// init containers before it is released (CreatingContainer). Without a placement the
// runtime's default stays.
func (m *Manager) ApplyContainer(_ context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	if mems := m.CreatingContainer(pod, c); mems != "" {
		podhooks.LinuxResources(cfg).CpusetMems = mems
	}
	return nil
}
