package status

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// conditions computes the five pod conditions, keeping each one's transition time while its
// value stays the same.
func conditions(in Input, st *v1.PodStatus) []v1.PodCondition {
	sandboxReady := in.Runtime != nil && len(in.Runtime.Sandboxes) > 0 && in.Runtime.Sandboxes[0].Ready
	initialized, initReason := initializedCondition(in.Pod, st)
	containersReady, notReady := allReady(in.Pod, st)
	readyReason, readyMsg := "", ""
	if !containersReady {
		readyReason, readyMsg = "ContainersNotReady", "containers with unready status: "+notReady
	}
	if IsTerminal(st.Phase) {
		containersReady, readyReason, readyMsg = false, "PodCompleted", ""
		if st.Phase == v1.PodFailed {
			readyReason = "PodFailed"
		}
	}
	ready, podReadyReason, podReadyMsg := containersReady, readyReason, readyMsg
	if gateMsg := unmetReadinessGate(in.Pod); containersReady && gateMsg != "" {
		ready, podReadyReason, podReadyMsg = false, "ReadinessGatesNotReady", gateMsg
	}
	out := []v1.PodCondition{
		cond(in, v1.PodReadyToStartContainers, sandboxReady, "", ""),
		cond(in, v1.PodInitialized, initialized, initReason, initMessage(in.Pod, initReason, st)),
		cond(in, v1.PodReady, ready, podReadyReason, podReadyMsg),
		cond(in, v1.ContainersReady, containersReady, readyReason, readyMsg),
		cond(in, v1.PodScheduled, true, "", ""),
	}
	return out
}

func initializedCondition(pod *v1.Pod, st *v1.PodStatus) (bool, string) {
	if len(pod.Spec.InitContainers) == 0 {
		return true, ""
	}
	if st.Phase == v1.PodSucceeded {
		return true, "PodCompleted"
	}
	if anyStarted(st.ContainerStatuses) {
		return true, "" // initialized before; its sidecars may be restarting
	}
	for i := range st.InitContainerStatuses {
		if !initialized(pod, &st.InitContainerStatuses[i]) {
			return false, "ContainersNotInitialized"
		}
	}
	return true, ""
}

// initialized says whether an init container has done its part: a sidecar has started, a
// regular one has succeeded.
func initialized(pod *v1.Pod, cs *v1.ContainerStatus) bool {
	if i := initIndex(pod, cs.Name); i >= 0 && sidecar.Is(&pod.Spec.InitContainers[i]) {
		return cs.Started != nil && *cs.Started
	}
	return cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
}

func initIndex(pod *v1.Pod, name string) int {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return i
		}
	}
	return -1
}

func initMessage(pod *v1.Pod, reason string, st *v1.PodStatus) string {
	if reason != "ContainersNotInitialized" {
		return ""
	}
	names := ""
	for i := range st.InitContainerStatuses {
		if cs := &st.InitContainerStatuses[i]; !initialized(pod, cs) {
			names = appendName(names, cs.Name)
		}
	}
	return "containers with incomplete status: " + names
}

// allReady reports whether the sidecars and app containers are all ready, else names the
// ones that are not (sidecars first, as upstream).
func allReady(pod *v1.Pod, st *v1.PodStatus) (bool, string) {
	names := ""
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		if i := initIndex(pod, cs.Name); i >= 0 && sidecar.Is(&pod.Spec.InitContainers[i]) && !cs.Ready {
			names = appendName(names, cs.Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			names = appendName(names, cs.Name)
		}
	}
	return names == "", names
}

func appendName(list, name string) string {
	if list == "" {
		return "[" + name + "]"
	}
	return list[:len(list)-1] + " " + name + "]"
}

// unmetReadinessGate describes the first readiness gate whose condition (set by someone else
// in the API) is not True; "" when all are met.
func unmetReadinessGate(pod *v1.Pod) string {
	for _, gate := range pod.Spec.ReadinessGates {
		var found *v1.PodCondition
		for i, c := range pod.Status.Conditions {
			if c.Type == gate.ConditionType {
				found = &pod.Status.Conditions[i]
			}
		}
		switch {
		case found == nil:
			return fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", gate.ConditionType)
		case found.Status != v1.ConditionTrue:
			return fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", gate.ConditionType, found.Status)
		}
	}
	return ""
}

func cond(in Input, t v1.PodConditionType, ok bool, reason, msg string) v1.PodCondition {
	status := v1.ConditionFalse
	if ok {
		status = v1.ConditionTrue
	}
	c := v1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: in.Now}
	if in.Previous != nil {
		for _, p := range in.Previous.Conditions {
			if p.Type == t && p.Status == status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return c
}

// SetTerminal gives a pod's status a terminal phase at once (eviction, node shutdown) and the
// readiness that goes with it, as a later computation would give it: a pod that has finished is
// never Ready, whatever its containers last reported (upstream issue 108594).
func SetTerminal(st *v1.PodStatus, phase v1.PodPhase, reason, message string) {
	st.Phase, st.Reason, st.Message = phase, reason, message
	readyReason := "PodCompleted"
	if phase == v1.PodFailed {
		readyReason = "PodFailed"
	}
	now := metav1.Now()
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && c.Status != v1.ConditionFalse {
			c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionFalse, readyReason, "", now
		}
	}
}
