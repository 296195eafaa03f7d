package cpumanager

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

var (
	_ podhooks.Container = (*Manager)(nil)
	_ podhooks.Resources = QuotaHook{}
)

// ApplyContainer is the CPU manager's container hook: a new container is pinned to its
// exclusive CPUs, else to the shared pool; the none policy leaves the runtime's default.
func (m *Manager) ApplyContainer(_ context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	if cpus := m.ContainerCpuset(pod, c); cpus != "" {
		podhooks.LinuxResources(cfg).CpusetCpus = cpus
	}
	return nil
}

// QuotaHook is the DisableCPUQuotaWithExclusiveCPUs feature gate (on by default upstream): a
// container holding CPUs of its own runs with no CFS quota (-1, the kernel's "max"), since
// throttling it within CPUs nobody else uses only adds latency. It lifts a quota the limit
// set; without cpuCFSQuota there is none to lift. It applies on creation and on an in-place
// resize alike.
type QuotaHook struct{ CPUs *Manager }

// ApplyResources lifts the quota of a container holding exclusive CPUs.
func (h QuotaHook) ApplyResources(pod *v1.Pod, c *v1.Container, res *runtimeapi.LinuxContainerResources) {
	if res.CpuQuota > 0 && !h.CPUs.ContainerCPUs(pod.UID, c.Name).IsEmpty() {
		res.CpuQuota = -1
	}
}
