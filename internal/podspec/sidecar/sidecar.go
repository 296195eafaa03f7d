// Package sidecar holds the rules for native sidecars (init containers with restartPolicy
// Always) that the runtime, status, prober, admission, cgroup and device managers share.
package sidecar

import (
	v1 "k8s.io/api/core/v1"
)

// Is reports whether c is a sidecar: an init container that restarts on its own and keeps
// running beside the app containers.
func Is(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// Has reports whether pod has at least one sidecar.
func Has(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if Is(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// LongRunning returns the sidecars, in spec order, then the app containers: the containers
// that run side by side once the pod is initialized, the ones an in-place resize changes.
func LongRunning(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		if Is(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// Fold is what the pod needs at most at once, from each container's own amounts (of): the
// larger of all app containers plus all sidecars, and of each regular init container plus the
// sidecars started before it. This is upstream's rule for pod requests and limits.
func Fold(pod *v1.Pod, of func(c *v1.Container) v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(out, of(&pod.Spec.Containers[i]))
	}
	sidecars, initPeak := v1.ResourceList{}, v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if Is(c) {
			add(out, of(c))
			add(sidecars, of(c))
			continue
		}
		running := v1.ResourceList{}
		add(running, of(c))
		add(running, sidecars)
		keepMax(initPeak, running)
	}
	keepMax(out, initPeak)
	return out
}

func add(into, from v1.ResourceList) {
	for name, q := range from {
		sum, ok := into[name]
		if !ok {
			into[name] = q.DeepCopy()
			continue
		}
		sum.Add(q)
		into[name] = sum
	}
}

func keepMax(into, from v1.ResourceList) {
	for name, q := range from {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}
