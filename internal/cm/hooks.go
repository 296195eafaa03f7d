package cm

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

var _ podhooks.Sandbox = (*ContainerManager)(nil)

// ApplySandbox is the container manager's sandbox hook: it makes the pod's cgroup (or
// rewrites its limits) and names it as the sandbox's cgroup parent. Without pod cgroups
// (cgroupsPerQOS off) the runtime places the pod and the config is left as it is.
func (m *ContainerManager) ApplySandbox(_ context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
	if m.pods == nil {
		return nil
	}
	parent, err := m.pods.EnsurePod(pod)
	if err != nil {
		return fmt.Errorf("pod cgroup: %w", err)
	}
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{}
	}
	cfg.Linux.CgroupParent = parent
	return nil
}
