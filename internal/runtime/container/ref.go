package container

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ContainerRef is the object events about a container are recorded on: the pod, with a field
// path naming the container, so they show up under the pod in `kubectl describe`.
func ContainerRef(pod *v1.Pod, c *v1.Container) *v1.ObjectReference {
	ref := &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion,
	}
	if c == nil {
		return ref
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", c.Name)
			return ref
		}
	}
	ref.FieldPath = fmt.Sprintf("spec.containers{%s}", c.Name)
	return ref
}
