package app

import (
	"github.com/nodelet/nodelet/internal/cm/cpumanager"
	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

// podHooks are what the resource managers add to the CRI configs, in the order the runtime
// applies them:
//   - prepare (before the sandbox is made): the DRA manager prepares the pod's ResourceClaims;
//   - sandbox: the pod's cgroup as its cgroup parent (container manager), when nodelet makes
//     the pod cgroups;
//   - container: the device plugins' setup, then the CPU manager's cpuset, then the memory
//     manager's cpuset.mems (upstream's order of hint providers), then the DRA claims' CDI
//     devices; each sets its own fields;
//   - resources (creation and in-place resize): the CFS quota lifted from a container holding
//     exclusive CPUs (DisableCPUQuotaWithExclusiveCPUs).
//
// The managers exist by now: the CPU, memory and device managers only in the daemon.
func (n *agent) podHooks() podhooks.Hooks {
	var h podhooks.Hooks
	if n.cm.OwnsPodCgroups() {
		h.Sandbox = append(h.Sandbox, n.cm)
	}
	if n.dra != nil {
		h.Prepare = append(h.Prepare, n.dra)
	}
	if n.devices != nil {
		h.Container = append(h.Container, n.devices)
	}
	if n.cpus != nil {
		h.Container = append(h.Container, n.cpus)
		if n.cfg.DisableCPUQuotaWithExclusiveCPUs {
			h.Resources = append(h.Resources, cpumanager.QuotaHook{CPUs: n.cpus})
		}
	}
	if n.memory != nil {
		h.Container = append(h.Container, n.memory)
	}
	if n.dra != nil {
		h.Container = append(h.Container, n.dra)
	}
	return h
}
