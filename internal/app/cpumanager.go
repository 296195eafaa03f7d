package app

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/cm/cpumanager"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// newCPUManager builds the CPU manager over the machine (restoring and checking its state file,
// which can refuse the start), one of the topology manager's hint providers. Only
// the daemon has one: a foreground pod's agent would write the daemon's state file too.
func (n *agent) newCPUManager() error {
	kc := n.cfg.Kubelet
	reserved, err := cpuset.Parse(kc.ReservedSystemCPUs)
	if err != nil {
		return fmt.Errorf("reservedSystemCPUs: %w", err)
	}
	count, err := reservedCPUCount(kc)
	if err != nil {
		return err
	}
	m, err := cpumanager.New(cpumanager.Options{
		Policy: kc.CPUManagerPolicy, PolicyOptions: kc.CPUManagerPolicyOptions, OptionGates: n.cfg.CPUManagerOptionGates,
		ReconcilePeriod: kc.CPUManagerReconcilePeriod.Duration,
		Machine:         n.machine, ReservedCPUs: reserved, NumReserved: count, StateDir: n.cfg.RootDir,
		ActivePods:   n.podsHoldingCPUs,
		SourcesReady: n.synced.Ready,
		PodStatus:    n.statuses.Get,
		SetContainerCPUs: func(ctx context.Context, id string, cpus cpuset.CPUSet) error {
			return n.cri.UpdateContainerResources(ctx, id, &cri.LinuxContainerResources{CpusetCpus: cpus.String()})
		},
	})
	if err != nil {
		return err
	}
	n.cpus = m
	return nil
}

// podQuotaExempt is the DisableCPUQuotaWithExclusiveCPUs hook of pod cgroups: a pod one of
// whose containers holds exclusive CPUs gets no CFS quota on its cgroup, as upstream (its
// containers' own quota: cpumanager.QuotaHook); nil with the gate off.
func (n *agent) podQuotaExempt() func(pod *v1.Pod) bool {
	if !n.cfg.DisableCPUQuotaWithExclusiveCPUs {
		return nil
	}
	return func(pod *v1.Pod) bool { return n.cpus != nil && n.cpus.PodHasExclusiveCPUs(pod) }
}

// reservedCPUCount is how many CPUs the static policy keeps from exclusive use: the kube- and
// system-reserved cpu together, rounded up (reservedSystemCPUs, when set, is already the whole
// of systemReserved cpu; config.Complete made it so).
func reservedCPUCount(kc *kubeletconfigv1beta1.KubeletConfiguration) (int, error) {
	var total resource.Quantity
	for field, reserved := range map[string]map[string]string{"kubeReserved": kc.KubeReserved, "systemReserved": kc.SystemReserved} {
		value, ok := reserved[string(v1.ResourceCPU)]
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return 0, fmt.Errorf("%s cpu: %w", field, err)
		}
		total.Add(q)
	}
	return int(math.Ceil(float64(total.MilliValue()) / 1000)), nil
}

// podsHoldingCPUs are the pods whose containers may keep CPUs: those nodelet knows that have
// not finished.
func (n *agent) podsHoldingCPUs() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range n.pods.Pods() {
		if st, ok := n.statuses.Get(p.UID); ok && (st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed) {
			continue
		}
		out = append(out, p)
	}
	return out
}
