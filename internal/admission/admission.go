// Package admission decides whether a new pod may run on this node.
package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/qos"
	"github.com/nodelet/nodelet/internal/status"
)

// Admitter checks the pod count against maxPods and resource requests against allocatable.
type Admitter struct {
	MaxPods  int
	Statuses *status.Manager
	// Allocatable returns the node's allocatable resources; nil or empty skips the check.
	Allocatable func() v1.ResourceList
}

// checked are the resources whose requests must fit allocatable.
var checked = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}

// Admit refuses a pod when the node runs maxPods pods already, or when its requests do not fit
// next to the active pods' requests.
func (a *Admitter) Admit(pod *v1.Pod, active []*v1.Pod) (bool, string, string) {
	if a.MaxPods > 0 && len(active) >= a.MaxPods {
		return false, "OutOfpods", fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(active), a.MaxPods)
	}
	if a.Allocatable == nil {
		return true, "", ""
	}
	alloc := a.Allocatable()
	want := Requests(pod)
	for _, name := range checked {
		capacity, ok := alloc[name]
		req := want[name]
		if !ok || req.IsZero() {
			continue
		}
		used := resource.Quantity{}
		for _, p := range active {
			r := Requests(p)[name]
			used.Add(r)
		}
		free := capacity.DeepCopy()
		free.Sub(used)
		if req.Cmp(free) > 0 {
			return false, "OutOf" + string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				name, amount(name, req), amount(name, used), amount(name, capacity))
		}
	}
	return true, "", ""
}

// amount prints cpu in millicores and everything else in base units, as upstream messages do.
func amount(name v1.ResourceName, q resource.Quantity) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// Requests returns what a pod asks for: the larger of its app containers' sum and its biggest
// init container (init containers run one at a time, before the app containers), plus overhead.
func Requests(pod *v1.Pod) v1.ResourceList {
	out := v1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range pod.Spec.Overhead {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	return out
}

// Reject records the refusal as the pod's final status: phase Failed with the reason.
func (a *Admitter) Reject(pod *v1.Pod, reason, message string) {
	now := metav1.Now()
	a.Statuses.Set(pod, v1.PodStatus{
		Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message,
		QOSClass: qos.Class(pod), StartTime: &now,
	})
}
