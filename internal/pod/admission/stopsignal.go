package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/pod/podfields"
	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
)

// checkStopSignal refuses a pod whose containers set lifecycle.stopSignal when nodelet would
// not act on it: with the ContainerStopSignals gate off (upstream's kubelet then ignores the
// field), or on a runtime that drops CRI's stop_signal and would stop the container with the
// image's STOPSIGNAL instead.
func (a *Admitter) checkStopSignal(pod *v1.Pod) (bool, string, string) {
	field := stopSignalField(&pod.Spec)
	if field == "" {
		return true, "", ""
	}
	if !a.StopSignals {
		return false, podfields.Reason, field + ": the ContainerStopSignals feature gate (alpha in 1.33) is off on this node; " +
			"turn it on in featureGates, or set STOPSIGNAL in the image"
	}
	if a.RuntimeFeatures == nil || !a.RuntimeFeatures.Has(runtimefeatures.StopSignals) {
		lacking := "the container runtime is not known to take it"
		if a.RuntimeFeatures != nil {
			lacking = a.RuntimeFeatures.Lacking(runtimefeatures.StopSignals)
		}
		return false, podfields.Reason, field + ": container stop signals need a runtime that takes the signal through CRI; " +
			lacking + " (older runtimes stop the container with the image's STOPSIGNAL: set STOPSIGNAL in the image)"
	}
	return true, "", ""
}

// stopSignalField is the path of the first container that sets lifecycle.stopSignal, "" when
// none does.
func stopSignalField(spec *v1.PodSpec) string {
	sets := func(l *v1.Lifecycle) bool { return l != nil && l.StopSignal != nil }
	for i, c := range spec.InitContainers {
		if sets(c.Lifecycle) {
			return fmt.Sprintf("spec.initContainers[%d].lifecycle.stopSignal", i)
		}
	}
	for i, c := range spec.Containers {
		if sets(c.Lifecycle) {
			return fmt.Sprintf("spec.containers[%d].lifecycle.stopSignal", i)
		}
	}
	for i, c := range spec.EphemeralContainers {
		if sets(c.Lifecycle) {
			return fmt.Sprintf("spec.ephemeralContainers[%d].lifecycle.stopSignal", i)
		}
	}
	return ""
}
