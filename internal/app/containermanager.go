package app

import (
	"github.com/nodelet/nodelet/internal/cm"
)

// containerManagerConfig is what the container manager acts on, defaults applied.
func (n *agent) containerManagerConfig() cm.Config {
	cfg := n.cfg
	kc := cfg.Kubelet
	return cm.Config{
		CgroupsPerQOS: cfg.CgroupsPerQOS, CgroupDriver: kc.CgroupDriver, CgroupRoot: kc.CgroupRoot,
		PodPidsLimit: cfg.PodPidsLimit, CPUCFSQuota: cfg.CPUCFSQuota, ExclusiveCPUs: n.podQuotaExempt(),
		EnforceNodeAllocatable: kc.EnforceNodeAllocatable, KubeletCgroups: kc.KubeletCgroups, SystemCgroups: kc.SystemCgroups,
		KubeReserved: kc.KubeReserved, SystemReserved: kc.SystemReserved,
		KubeReservedCgroup: kc.KubeReservedCgroup, SystemReservedCgroup: kc.SystemReservedCgroup,
		Machine: n.host,
	}
}
