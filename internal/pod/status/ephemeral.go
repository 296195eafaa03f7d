package status

import (
	v1 "k8s.io/api/core/v1"
)

// ephemeralStatuses reports the pod's ephemeral (debug) containers in spec order. They are
// built like app container statuses but take no part in the pod's phase or conditions, are
// never restarted, and have no probes: Ready stays false and Started unset, as the kubelet
// reports them.
func ephemeralStatuses(in Input) []v1.ContainerStatus {
	specs := in.Pod.Spec.EphemeralContainers
	if len(specs) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(specs))
	for i := range specs {
		cs := containerStatus(in, v1.Container(specs[i].EphemeralContainerCommon), false)
		cs.Ready = false
		cs.Started = nil
		out = append(out, cs)
	}
	return out
}
