package app

import (
	"context"
	"fmt"
	goruntime "runtime"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/cgroups"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/container"
)

// cgroupSweepPeriod spaces the searches for cgroups of pods that are gone for good.
const cgroupSweepPeriod = time.Minute

// newPodCgroups makes the QoS cgroups and returns their manager when nodelet owns the pod
// cgroups: cgroupsPerQOS with the cgroupfs driver. nil means pods get no cgroup parent and
// the runtime places them.
func newPodCgroups(cfg *config.Config) (*cgroups.Manager, error) {
	kc := cfg.Kubelet
	if !cfg.CgroupsPerQOS {
		return nil, nil
	}
	if kc.CgroupDriver == "systemd" {
		klog.InfoS("Pod cgroups are left to the container runtime and systemd with cgroupDriver=systemd")
		return nil, nil
	}
	m, err := cgroups.New(cgroups.Options{
		CgroupRoot: kc.CgroupRoot, PodPidsLimit: cfg.PodPidsLimit,
		NodeMilliCPU: int64(goruntime.NumCPU()) * 1000, NoCPUQuota: !cfg.CPUCFSQuota,
	})
	if err == nil {
		err = m.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("pod cgroups: %w (nodelet needs root and writable cgroup mounts under /sys/fs/cgroup; pass --cgroups-per-qos=false --enforce-node-allocatable=none to run without pod cgroups)", err)
	}
	return m, nil
}

// sweepPodCgroups removes, now and then, the cgroups of pods that neither this node nor the
// runtime knows any more (e.g. nodelet stopped between removing a pod's containers and its
// cgroup). Pods of other nodelets sharing the runtime are on the runtime's list, so spared.
func (n *agent) sweepPodCgroups(ctx context.Context, sourcesReady func() bool, runtimePods func() ([]*container.RunningPod, time.Time)) {
	if n.cgroups == nil {
		return
	}
	ticker := time.NewTicker(cgroupSweepPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		listed, at := runtimePods()
		if !sourcesReady() || at.IsZero() {
			continue // an incomplete view would disown live pods
		}
		onRuntime := map[types.UID]bool{}
		for _, p := range listed {
			onRuntime[p.UID] = true
		}
		keep := func(uid types.UID) bool {
			_, known := n.pods.Get(uid)
			return known || onRuntime[uid]
		}
		if _, err := n.cgroups.SweepOrphans(keep); err != nil {
			klog.ErrorS(err, "Could not remove the cgroups of removed pods; retrying later")
		}
	}
}
