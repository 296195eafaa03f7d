package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/qos"
)

// Admit refuses pods the node cannot hold under pressure: under memory pressure only
// BestEffort pods (unless they tolerate the memory-pressure taint), under any other pressure
// every pod. Critical pods are always admitted. The reason is Evicted, as upstream says.
func (m *Manager) Admit(pod *v1.Pod) (bool, string, string) {
	memory, disk, pid := m.Pressure()
	if !memory && !disk && !pid {
		return true, "", ""
	}
	if m.deps.Critical != nil && m.deps.Critical(pod) {
		return true, "", ""
	}
	var conds []v1.NodeConditionType
	for _, c := range []struct {
		on   bool
		cond v1.NodeConditionType
	}{{memory, v1.NodeMemoryPressure}, {disk, v1.NodeDiskPressure}, {pid, v1.NodePIDPressure}} {
		if c.on {
			conds = append(conds, c.cond)
		}
	}
	if memory && !disk && !pid && (qos.Class(pod) != v1.PodQOSBestEffort || toleratesMemoryPressure(pod)) {
		return true, "", ""
	}
	return false, ReasonEvicted, fmt.Sprintf("The node had condition: %v. ", conds)
}

func toleratesMemoryPressure(pod *v1.Pod) bool {
	taint := v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
	for _, t := range pod.Spec.Tolerations {
		if t.ToleratesTaint(&taint) {
			return true
		}
	}
	return false
}
