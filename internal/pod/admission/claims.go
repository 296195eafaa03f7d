package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/pod/podfields"
)

// checkClaims refuses a pod with ResourceClaims when nodelet prepares none: with the
// DynamicResourceAllocation gate off (and in a foreground run) no DRA driver registers, so the
// claims could never be prepared and the containers would start without their devices.
func (a *Admitter) checkClaims(pod *v1.Pod) (bool, string, string) {
	if a.DynamicResources {
		return true, "", ""
	}
	field := claimsField(&pod.Spec)
	if field == "" {
		return true, "", ""
	}
	return false, podfields.Reason, field + ": DRA claims are prepared only by the nodelet daemon with the DynamicResourceAllocation " +
		"feature gate (beta, off by default in 1.33) on; without it no DRA driver registers and the claims cannot be prepared"
}

// claimsField is the path of the first field that uses ResourceClaims in the spec's field
// order (the containers' claims before the pod's), "" when none does.
func claimsField(spec *v1.PodSpec) string {
	for i, c := range spec.InitContainers {
		if len(c.Resources.Claims) > 0 {
			return fmt.Sprintf("spec.initContainers[%d].resources.claims", i)
		}
	}
	for i, c := range spec.Containers {
		if len(c.Resources.Claims) > 0 {
			return fmt.Sprintf("spec.containers[%d].resources.claims", i)
		}
	}
	for i, c := range spec.EphemeralContainers {
		if len(c.Resources.Claims) > 0 {
			return fmt.Sprintf("spec.ephemeralContainers[%d].resources.claims", i)
		}
	}
	if len(spec.ResourceClaims) > 0 {
		return "spec.resourceClaims"
	}
	return ""
}
