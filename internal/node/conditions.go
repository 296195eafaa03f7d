package node

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionText is what a node condition says in each state, and the event announcing it.
type conditionText struct {
	trueReason, trueMessage, trueEvent    string
	falseReason, falseMessage, falseEvent string
}

// The reasons and event names are the well-known ones the kubelet uses; tools match on them.
var pressureTexts = map[v1.NodeConditionType]conditionText{
	v1.NodeMemoryPressure: {
		"KubeletHasInsufficientMemory", "kubelet has insufficient memory available", "NodeHasInsufficientMemory",
		"KubeletHasSufficientMemory", "kubelet has sufficient memory available", "NodeHasSufficientMemory",
	},
	v1.NodeDiskPressure: {
		"KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure",
		"KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure",
	},
	v1.NodePIDPressure: {
		"KubeletHasInsufficientPID", "kubelet has insufficient PID available", "NodeHasInsufficientPID",
		"KubeletHasSufficientPID", "kubelet has sufficient PID available", "NodeHasSufficientPID",
	},
}

// conditionOrder is the order conditions are added to a Node that lacks them.
var conditionOrder = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}

const (
	readyReason    = "KubeletReady"
	readyMessage   = "kubelet is posting ready status"
	notReadyReason = "KubeletNotReady"
)

// setConditions sets the pressure and Ready conditions, leaving any others (set by other
// components) alone. Heartbeats move to now; transition times only when the status changes.
func (c *Controller) setConditions(n *v1.Node, now time.Time) {
	var memory, disk, pid bool
	if c.deps.Pressure != nil {
		memory, disk, pid = c.deps.Pressure()
	}
	for typ, pressured := range map[v1.NodeConditionType]bool{
		v1.NodeMemoryPressure: memory, v1.NodeDiskPressure: disk, v1.NodePIDPressure: pid,
	} {
		text := pressureTexts[typ]
		cond := v1.NodeCondition{Type: typ, Status: v1.ConditionFalse, Reason: text.falseReason, Message: text.falseMessage}
		if pressured {
			cond = v1.NodeCondition{Type: typ, Status: v1.ConditionTrue, Reason: text.trueReason, Message: text.trueMessage}
		}
		setCondition(n, cond, now)
	}
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: readyReason, Message: readyMessage}
	if err := c.notReady(n); err != nil {
		ready = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: notReadyReason, Message: err.Error()}
	}
	setCondition(n, ready, now)
}

// notReady says why the node cannot take pods: health checks, or capacity it failed to report.
func (c *Controller) notReady(n *v1.Node) error {
	var problems []string
	if c.deps.Health != nil {
		if err := c.deps.Health(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	var missing []string
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
		if q, ok := n.Status.Capacity[name]; !ok || q.IsZero() {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		problems = append(problems, "missing node capacity for resources: "+strings.Join(missing, ", "))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

// setCondition puts cond on n, keeping the transition time when the status is unchanged.
func setCondition(n *v1.Node, cond v1.NodeCondition, now time.Time) {
	cond.LastHeartbeatTime = metav1.NewTime(now)
	cond.LastTransitionTime = metav1.NewTime(now)
	for i := range n.Status.Conditions {
		old := &n.Status.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		*old = cond
		return
	}
	n.Status.Conditions = append(n.Status.Conditions, cond)
	sortConditions(n.Status.Conditions)
}

// sortConditions moves our conditions into conditionOrder, others keeping their places at the
// front, so a Node built from scratch lists them as the kubelet does.
func sortConditions(conds []v1.NodeCondition) {
	rank := func(t v1.NodeConditionType) int {
		for i, o := range conditionOrder {
			if o == t {
				return i + 1
			}
		}
		return 0
	}
	for i := 1; i < len(conds); i++ {
		for j := i; j > 0 && rank(conds[j].Type) < rank(conds[j-1].Type); j-- {
			conds[j], conds[j-1] = conds[j-1], conds[j]
		}
	}
}

// recordTransitions records an event for each of our conditions whose status differs between
// before and after. A pressure condition appearing counts as a change; Ready appearing counts
// only when it is True, so a node registering before it is ready stays quiet until it is.
func (c *Controller) recordTransitions(before, after []v1.NodeCondition) {
	for _, typ := range conditionOrder {
		now, ok := findCondition(after, typ)
		if !ok {
			continue
		}
		was, existed := findCondition(before, typ)
		if existed && was.Status == now.Status {
			continue
		}
		var event string
		if typ == v1.NodeReady {
			switch {
			case now.Status == v1.ConditionTrue:
				event = "NodeReady"
			case existed:
				event = "NodeNotReady"
			}
		} else if text := pressureTexts[typ]; now.Status == v1.ConditionTrue {
			event = text.trueEvent
		} else {
			event = text.falseEvent
		}
		if event != "" {
			c.deps.Recorder.Eventf(c.ref, v1.EventTypeNormal, event, "Node %s status is now: %s", c.opts.NodeName, event)
		}
	}
}

func findCondition(conds []v1.NodeCondition, typ v1.NodeConditionType) (v1.NodeCondition, bool) {
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return v1.NodeCondition{}, false
}

// withoutPressure drops the pressure conditions, so they are announced again.
func withoutPressure(conds []v1.NodeCondition) []v1.NodeCondition {
	var out []v1.NodeCondition
	for _, c := range conds {
		if _, pressure := pressureTexts[c.Type]; !pressure {
			out = append(out, c)
		}
	}
	return out
}
