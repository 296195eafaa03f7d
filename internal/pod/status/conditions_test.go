package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A running, ready pod made terminal at once is not Ready in the same status, and conditions
// that were already false or are not about readiness keep their times and reasons.
func TestSetTerminalTakesReadinessAway(t *testing.T) {
	st := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue},
		{Type: v1.ContainersReady, Status: v1.ConditionTrue},
		{Type: v1.PodInitialized, Status: v1.ConditionTrue},
		{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse, Reason: "kept"},
	}}
	SetTerminal(&st, v1.PodFailed, "Evicted", "low on memory")
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != "low on memory" {
		t.Errorf("phase %s reason %q message %q", st.Phase, st.Reason, st.Message)
	}
	for _, c := range st.Conditions {
		switch c.Type {
		case v1.PodReady, v1.ContainersReady:
			if c.Status != v1.ConditionFalse || c.Reason != "PodFailed" || c.LastTransitionTime.IsZero() {
				t.Errorf("%s: %s %q at %v, want False PodFailed now", c.Type, c.Status, c.Reason, c.LastTransitionTime)
			}
		case v1.PodInitialized:
			if c.Status != v1.ConditionTrue {
				t.Errorf("Initialized changed to %s", c.Status)
			}
		case v1.PodReadyToStartContainers:
			if c.Reason != "kept" || !c.LastTransitionTime.IsZero() {
				t.Errorf("an already false condition was rewritten: %+v", c)
			}
		}
	}
	SetTerminal(&st, v1.PodSucceeded, "", "")
	if st.Conditions[0].Reason != "PodFailed" {
		t.Errorf("a condition already False was rewritten to %q", st.Conditions[0].Reason)
	}
}
