package resize

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Decorate adds to a computed status what resize owns: each container's allocatedResources
// and resources, and the PodResizePending and PodResizeInProgress conditions.
func (r *Resizer) Decorate(pod *v1.Pod, rs *container.PodStatus, st *v1.PodStatus) {
	if r == nil {
		return
	}
	allocated := r.Allocated(pod)
	r.fillResources(allocated, rs, allocated.Spec.InitContainers, st.InitContainerStatuses)
	r.fillResources(allocated, rs, allocated.Spec.Containers, st.ContainerStatuses)
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		return // a finished pod is not resized
	}
	busy := r.inProgress(allocated, rs)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state(pod.UID)
	if s.pending != nil {
		st.Conditions = append(st.Conditions, *s.pending)
	}
	if !busy {
		s.inProgress, s.lastErr = nil, ""
		return
	}
	reason := ""
	if s.lastErr != "" {
		reason = v1.PodReasonError
	}
	s.inProgress = updated(s.inProgress, v1.PodResizeInProgress, reason, s.lastErr, r.now())
	st.Conditions = append(st.Conditions, *s.inProgress)
}

// fillResources sets allocatedResources and resources on the statuses of containers the
// runtime holds an instance of, as upstream: a running container shows what is in effect
// (what the runtime reports, else what nodelet set), any other its allocation.
func (r *Resizer) fillResources(pod *v1.Pod, rs *container.PodStatus, specs []v1.Container, statuses []v1.ContainerStatus) {
	for i := range statuses {
		cs := &statuses[i]
		if i >= len(specs) || specs[i].Name != cs.Name {
			continue
		}
		current := rs.FindContainer(cs.Name)
		if current == nil {
			continue
		}
		spec := &specs[i]
		cs.AllocatedResources = spec.Resources.Requests.DeepCopy()
		if current.State != container.StateRunning {
			cs.Resources = spec.Resources.DeepCopy()
			continue
		}
		inEffect := spec.Resources.DeepCopy()
		if actuated, ok := r.Allocations.Actuated(pod.UID, spec.Name); ok {
			inEffect = actuated.DeepCopy()
		}
		if rep := current.Resources; rep != nil {
			overlay(inEffect.Limits, v1.ResourceCPU, rep.CPULimit, minMilliCPULimit)
			overlay(inEffect.Limits, v1.ResourceMemory, rep.MemoryLimit, -1)
			overlay(inEffect.Requests, v1.ResourceCPU, rep.CPURequest, minMilliCPURequest)
		}
		cs.Resources = inEffect
	}
}

// Below these the runtime's cpu figures are the kernel's floors, not what was asked for:
// the recorded value stays then, as upstream keeps the allocated one.
const (
	minMilliCPULimit   = 10
	minMilliCPURequest = 2
)

// overlay replaces list's name with what the runtime reports, when both have it.
func overlay(list v1.ResourceList, name v1.ResourceName, reported *resource.Quantity, floorMilli int64) {
	have, ok := list[name]
	if !ok || reported == nil {
		return
	}
	if floorMilli >= 0 && reported.MilliValue() <= floorMilli && have.MilliValue() <= floorMilli {
		return
	}
	list[name] = reported.DeepCopy()
}

// inProgress says whether a running resizable container's resources in effect differ from
// its allocation.
func (r *Resizer) inProgress(pod *v1.Pod, rs *container.PodStatus) bool {
	check := func(c *v1.Container) bool {
		st := rs.FindContainer(c.Name)
		if st == nil || st.State != container.StateRunning {
			return false
		}
		actuated, ok := r.Allocations.Actuated(pod.UID, c.Name)
		if !ok {
			return false
		}
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if !same(c.Resources.Requests, actuated.Requests, name) || !same(c.Resources.Limits, actuated.Limits, name) {
				return true
			}
		}
		return false
	}
	return slices.ContainsFunc(sidecar.LongRunning(pod), check)
}

func same(a, b v1.ResourceList, name v1.ResourceName) bool {
	qa, qb := a[name], b[name]
	return qa.Cmp(qb) == 0
}

// updated returns the condition with reason and message: its times stay while they do not
// change. (Upstream also stamps lastProbeTime at every sync; stamping it only on change
// spares the API server a status write per sync of a waiting pod.)
func updated(old *v1.PodCondition, t v1.PodConditionType, reason, msg string, at time.Time) *v1.PodCondition {
	if old != nil && old.Reason == reason && old.Message == msg {
		return old
	}
	now := metav1.NewTime(at)
	c := &v1.PodCondition{Type: t, Status: v1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now}
	if old != nil && old.Reason == reason {
		c.LastTransitionTime = old.LastTransitionTime
	}
	return c
}
