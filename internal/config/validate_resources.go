package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// evictionSignals are the resource signals eviction thresholds may name.
var evictionSignals = []string{
	"memory.available",
	"allocatableMemory.available",
	"nodefs.available",
	"nodefs.inodesFree",
	"imagefs.available",
	"imagefs.inodesFree",
	"containerfs.available",
	"containerfs.inodesFree",
	"pid.available",
}

// enforceableAllocatable are the values enforceNodeAllocatable accepts.
var enforceableAllocatable = []string{
	"pods", "system-reserved", "kube-reserved",
	"system-reserved-compressible", "kube-reserved-compressible", "none",
}

func (v *validator) checkEviction(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	v.thresholds("evictionHard", kc.EvictionHard)
	v.thresholds("evictionSoft", kc.EvictionSoft)
	v.thresholds("evictionMinimumReclaim", kc.EvictionMinimumReclaim)
	for _, signal := range sortedKeys(kc.EvictionSoftGracePeriod) {
		field := fmt.Sprintf("evictionSoftGracePeriod[%q]", signal)
		if !slices.Contains(evictionSignals, signal) {
			v.add("evictionSoftGracePeriod", "unknown eviction signal %q", signal)
			continue
		}
		d, err := time.ParseDuration(kc.EvictionSoftGracePeriod[signal])
		if err != nil || d < 0 {
			v.add(field, "must be a non-negative duration, got %q", kc.EvictionSoftGracePeriod[signal])
		}
	}
	// A soft threshold without a grace period could never fire.
	for _, signal := range sortedKeys(kc.EvictionSoft) {
		if _, ok := kc.EvictionSoftGracePeriod[signal]; !ok {
			v.add(fmt.Sprintf("evictionSoft[%q]", signal), "needs a matching evictionSoftGracePeriod entry")
		}
	}
	v.atLeast("evictionMaxPodGracePeriod", int64(kc.EvictionMaxPodGracePeriod), 0)
}

// thresholds checks a signal → threshold map whose values are quantities or
// percentages.
func (v *validator) thresholds(field string, m map[string]string) {
	for _, signal := range sortedKeys(m) {
		if !slices.Contains(evictionSignals, signal) {
			v.add(field, "unknown eviction signal %q (known: %s)", signal, strings.Join(evictionSignals, ", "))
			continue
		}
		if msg := thresholdError(m[signal]); msg != "" {
			v.add(fmt.Sprintf("%s[%q]", field, signal), "%s", msg)
		}
	}
}

func thresholdError(value string) string {
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		n, err := strconv.ParseFloat(pct, 64)
		if err != nil || n < 0 || n > 100 {
			return fmt.Sprintf("percentage must be between 0%% and 100%%, got %q", value)
		}
		return ""
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return fmt.Sprintf("must be a quantity such as 100Mi or a percentage such as 10%%, got %q", value)
	}
	if q.Sign() < 0 {
		return fmt.Sprintf("must not be negative, got %q", value)
	}
	return ""
}

func (v *validator) checkNodeAllocatable(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	v.reserved("systemReserved", kc.SystemReserved)
	v.reserved("kubeReserved", kc.KubeReserved)

	enforce := kc.EnforceNodeAllocatable
	for _, item := range enforce {
		v.oneOf("enforceNodeAllocatable", item, enforceableAllocatable...)
	}
	if slices.Contains(enforce, "none") && len(enforce) > 1 {
		v.add("enforceNodeAllocatable", `"none" cannot be combined with other values, got %v`, enforce)
	}
	if slices.Contains(enforce, "system-reserved") && kc.SystemReservedCgroup == "" {
		v.add("systemReservedCgroup", `must be set when enforceNodeAllocatable contains "system-reserved"`)
	}
	if slices.Contains(enforce, "kube-reserved") && kc.KubeReservedCgroup == "" {
		v.add("kubeReservedCgroup", `must be set when enforceNodeAllocatable contains "kube-reserved"`)
	}
	enforcing := len(enforce) > 0 && !slices.Equal(enforce, []string{"none"})
	if enforcing && kc.CgroupsPerQOS != nil && !*kc.CgroupsPerQOS {
		v.add("enforceNodeAllocatable", `requires cgroupsPerQOS to be true; set it to [] or ["none"] to run without per-QoS cgroups`)
	}
}

// reserved checks a systemReserved / kubeReserved map: cpu, memory, ephemeral-storage and pid
// only, as upstream (huge pages cannot be reserved: allocatable holds them all).
func (v *validator) reserved(field string, m map[string]string) {
	for _, name := range sortedKeys(m) {
		known := name == string(corev1.ResourceCPU) || name == string(corev1.ResourceMemory) ||
			name == string(corev1.ResourceEphemeralStorage) || name == "pid"
		if !known {
			v.add(field, "cannot reserve %q resource", name)
			continue
		}
		q, err := resource.ParseQuantity(m[name])
		if err != nil || q.Sign() < 0 {
			v.add(fmt.Sprintf("%s[%q]", field, name), "must be a non-negative quantity, got %q", m[name])
		}
	}
}

// taintErrors lists what is wrong with one taint.
func taintErrors(t corev1.Taint) []string {
	var msgs []string
	for _, msg := range validation.IsQualifiedName(t.Key) {
		msgs = append(msgs, fmt.Sprintf("key %q: %s", t.Key, msg))
	}
	if t.Value != "" {
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			msgs = append(msgs, fmt.Sprintf("value %q: %s", t.Value, msg))
		}
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		msgs = append(msgs, fmt.Sprintf("effect must be one of NoSchedule, PreferNoSchedule, NoExecute, got %q", t.Effect))
	}
	return msgs
}
