package admission

import v1 "k8s.io/api/core/v1"

// allocatedView gives pod and the active pods their allocated resources: a resize waiting
// for room does not count yet, and after a restart a pod is admitted with what it was given.
func (a *Admitter) allocatedView(pod *v1.Pod, active []*v1.Pod) (*v1.Pod, []*v1.Pod) {
	if a.Allocated == nil {
		return pod, active
	}
	out := make([]*v1.Pod, len(active))
	for i, p := range active {
		out[i] = a.Allocated(p)
	}
	return a.Allocated(pod), out
}
