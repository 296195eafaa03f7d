// Package cm is the container manager: it keeps the QoS and pod cgroups (made, resized and
// removed with their pods, and swept when their pods are gone), places nodelet and the host's
// processes (kubeletCgroups, systemCgroups), enforces node allocatable on the pods cgroup and
// the reserved cgroups, and names the system containers the stats summary reports.
package cm

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/host/machine"
)

// Config is the part of the kubelet configuration the container manager acts on.
type Config struct {
	CgroupsPerQOS bool
	CgroupDriver  string // cgroupfs or systemd
	CgroupRoot    string // "" is "/"
	PodPidsLimit  int64  // -1 or 0: unlimited
	CPUCFSQuota   bool
	// ExclusiveCPUs: see Options.ExclusiveCPUs.
	ExclusiveCPUs func(pod *v1.Pod) bool

	EnforceNodeAllocatable []string
	KubeletCgroups         string
	SystemCgroups          string
	KubeReserved           map[string]string
	SystemReserved         map[string]string
	KubeReservedCgroup     string
	SystemReservedCgroup   string
	// Machine is the machine's capacity, read once at start; node allocatable is enforced
	// against it.
	Machine *machine.Machine
}

// ContainerManager is what the rest of nodelet asks of the node's cgroups.
type ContainerManager struct {
	cfg        Config
	pods       *QOSCgroups  // nil unless nodelet makes the pod cgroups
	runtimePid atomic.Int64 // the container runtime's process, for its system container
}

// New makes the QoS cgroups when nodelet owns the pod cgroups (cgroupsPerQOS), places the processes and enforces node allocatable. Any failure should
// stop nodelet: a node told to protect its reservations must not run pods unprotected.
func New(ctx context.Context, cfg Config) (*ContainerManager, error) {
	pods, err := newPodCgroups(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m := &ContainerManager{cfg: cfg, pods: pods}
	if err := m.enforceAllocatable(); err != nil {
		return nil, err
	}
	return m, nil
}

// newPodCgroups makes the QoS cgroups and returns their manager when nodelet owns the pod
// cgroups (cgroupsPerQOS), as cgroupfs directories or, with cgroupDriver systemd, as slices
// systemd makes. nil means pods get no cgroup parent and the runtime places them.
func newPodCgroups(ctx context.Context, cfg Config) (*QOSCgroups, error) {
	if !cfg.CgroupsPerQOS {
		return nil, nil
	}
	opts := Options{
		CgroupRoot: cfg.CgroupRoot, PodPidsLimit: cfg.PodPidsLimit,
		NodeMilliCPU: int64(goruntime.NumCPU()) * 1000, NoCPUQuota: !cfg.CPUCFSQuota,
		ExclusiveCPUs: cfg.ExclusiveCPUs,
	}
	if cfg.CgroupDriver == "systemd" {
		conn, err := ConnectSystemd(ctx)
		if err != nil {
			return nil, err
		}
		opts.systemd, opts.systemdCtx = conn, ctx
	}
	m, err := NewQOSCgroups(opts)
	if err == nil {
		err = m.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("pod cgroups: %w (nodelet needs root and writable cgroup mounts under /sys/fs/cgroup; pass --cgroups-per-qos=false --enforce-node-allocatable=none to run without pod cgroups)", err)
	}
	return m, nil
}

// OwnsPodCgroups tells whether nodelet makes the pod cgroups (else the runtime places pods).
func (m *ContainerManager) OwnsPodCgroups() bool { return m.pods != nil }

// Name names the per-pod state the container manager keeps: the pod's cgroup.
func (m *ContainerManager) Name() string { return "cgroup" }

// ReleasePod removes the pod's cgroup; an error (processes still in it) is retried by the
// caller. Without pod cgroups there is nothing to release.
func (m *ContainerManager) ReleasePod(uid types.UID) error {
	if m.pods == nil {
		return nil
	}
	return m.pods.RemovePod(uid)
}

// PodsCgroup is the cgroup every pod cgroup is under (kubepods), or "" when nodelet makes
// no pod cgroups.
func (m *ContainerManager) PodsCgroup() string {
	if m.pods == nil {
		return ""
	}
	return m.pods.qosPath(v1.PodQOSGuaranteed)
}

// PodCgroup is the path of the pod's cgroup, "" when it has none.
func (m *ContainerManager) PodCgroup(uid types.UID) string {
	if m.pods == nil {
		return ""
	}
	return m.pods.PodCgroup(uid)
}

// MemoryCgroups are the cgroup v1 memory directories of the host's root cgroup and of the
// pods, where memory thresholds are registered with the kernel.
func (m *ContainerManager) MemoryCgroups() (root, pods string, err error) {
	if m.pods == nil {
		return "", "", fmt.Errorf("kernelMemcgNotification needs nodelet's own cgroups (cgroupsPerQOS)")
	}
	return m.pods.MemoryDirs()
}

// PodConfig returns the pod cgroup's current cpu and memory settings and the desired ones.
func (m *ContainerManager) PodConfig(pod *v1.Pod) (current, desired PodConfig, err error) {
	return m.pods.PodConfig(pod)
}

// SetPodConfig writes c's non-zero fields to the pod cgroup.
func (m *ContainerManager) SetPodConfig(pod *v1.Pod, c PodConfig) error {
	return m.pods.SetPodConfig(pod, c)
}

// PodMemoryUsage returns the memory the pod's cgroup uses now, in bytes.
func (m *ContainerManager) PodMemoryUsage(pod *v1.Pod) (int64, error) {
	return m.pods.PodMemoryUsage(pod)
}

// RetainOnly removes the cgroups of pods keep disowns on two looks in a row (e.g. nodelet
// stopped between removing a pod's containers and its cgroup). Pods of other nodelets sharing
// the runtime are on the runtime's list, which the caller's keep counts, so spared.
func (m *ContainerManager) RetainOnly(keep func(types.UID) bool) error {
	if m.pods == nil {
		return nil
	}
	_, err := m.pods.SweepOrphans(keep)
	return err
}
