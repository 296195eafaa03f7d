package config

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
)

// checkCPUManager validates cpuManagerPolicy, its options and reservedSystemCPUs as upstream
// does (each option only when the feature gate of its stage is on), and refuses the static
// policy's options nodelet does not implement by name.
func (v *validator) checkCPUManager(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	v.oneOf("cpuManagerPolicy", kc.CPUManagerPolicy, cmpolicy.CPUNone, cmpolicy.CPUStatic)
	if _, err := cmpolicy.ParseCPUOptions(kc.CPUManagerPolicy, kc.CPUManagerPolicyOptions, cpuManagerOptionGates(kc)); err != nil {
		v.add("cpuManagerPolicyOptions", "%v", err)
	}
	if kc.CPUManagerPolicy == cmpolicy.CPUStatic && kc.CPUManagerReconcilePeriod.Duration <= 0 {
		v.add("cpuManagerReconcilePeriod", "must be > 0 with the static policy, got %s", kc.CPUManagerReconcilePeriod.Duration)
	}
	if kc.ReservedSystemCPUs == "" {
		return
	}
	if kc.SystemReservedCgroup != "" || kc.KubeReservedCgroup != "" {
		v.add("reservedSystemCPUs", "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)")
	}
	if _, err := cpuset.Parse(kc.ReservedSystemCPUs); err != nil {
		v.add("reservedSystemCPUs", "unable to parse reservedSystemCPUs (--reserved-cpus) %v, error: %v", kc.ReservedSystemCPUs, err)
	}
}

// applyReservedSystemCPUs makes reservedSystemCPUs the node's whole CPU reservation, as
// upstream does: systemReserved cpu becomes their count and kubeReserved loses its cpu, so
// node allocatable and the CPU manager agree. kc must be valid.
func applyReservedSystemCPUs(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	cpus, err := cpuset.Parse(kc.ReservedSystemCPUs)
	if err != nil || cpus.IsEmpty() {
		return
	}
	cpu := string(corev1.ResourceCPU)
	delete(kc.KubeReserved, cpu)
	if kc.SystemReserved == nil {
		kc.SystemReserved = map[string]string{}
	}
	kc.SystemReserved[cpu] = strconv.Itoa(cpus.Size())
}
