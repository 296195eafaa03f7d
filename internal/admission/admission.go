// Package admission decides whether a new pod may run on this node.
package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/qos"
	"github.com/nodelet/nodelet/internal/status"
)

// Admitter checks pod count against maxPods.
type Admitter struct {
	MaxPods  int
	Statuses *status.Manager
}

// Admit refuses a pod when the node already runs maxPods pods.
func (a *Admitter) Admit(pod *v1.Pod, active []*v1.Pod) (bool, string, string) {
	if a.MaxPods > 0 && len(active) >= a.MaxPods {
		return false, "OutOfpods", fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(active), a.MaxPods)
	}
	return true, "", ""
}

// Reject records the refusal as the pod's final status: phase Failed with the reason.
func (a *Admitter) Reject(pod *v1.Pod, reason, message string) {
	now := metav1.Now()
	a.Statuses.Set(pod, v1.PodStatus{
		Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message,
		QOSClass: qos.Class(pod), StartTime: &now,
	})
}
