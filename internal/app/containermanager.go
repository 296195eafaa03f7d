package app

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/container"
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

// runtimePodUIDs lists the UIDs of the pods the runtime last reported, and when.
func runtimePodUIDs(list func() ([]*container.RunningPod, time.Time)) func() ([]types.UID, time.Time) {
	return func() ([]types.UID, time.Time) {
		pods, at := list()
		uids := make([]types.UID, 0, len(pods))
		for _, p := range pods {
			uids = append(uids, p.UID)
		}
		return uids, at
	}
}
