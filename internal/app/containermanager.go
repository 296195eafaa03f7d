package app

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/runtime"
)

// containerManagerConfig is what the container manager acts on, defaults applied.
func containerManagerConfig(kc *kubeletconfigv1beta1.KubeletConfiguration) cm.Config {
	pidsLimit := int64(-1)
	if kc.PodPidsLimit != nil {
		pidsLimit = *kc.PodPidsLimit
	}
	return cm.Config{
		CgroupsPerQOS: boolOr(kc.CgroupsPerQOS, true), CgroupDriver: kc.CgroupDriver, CgroupRoot: kc.CgroupRoot,
		PodPidsLimit: pidsLimit, CPUCFSQuota: boolOr(kc.CPUCFSQuota, true),
		EnforceNodeAllocatable: kc.EnforceNodeAllocatable, KubeletCgroups: kc.KubeletCgroups, SystemCgroups: kc.SystemCgroups,
		KubeReserved: kc.KubeReserved, SystemReserved: kc.SystemReserved,
		KubeReservedCgroup: kc.KubeReservedCgroup, SystemReservedCgroup: kc.SystemReservedCgroup,
	}
}

// runtimePodUIDs lists the UIDs of the pods the runtime last reported, and when.
func runtimePodUIDs(list func() ([]*runtime.RunningPod, time.Time)) func() ([]types.UID, time.Time) {
	return func() ([]types.UID, time.Time) {
		pods, at := list()
		uids := make([]types.UID, 0, len(pods))
		for _, p := range pods {
			uids = append(uids, p.UID)
		}
		return uids, at
	}
}
