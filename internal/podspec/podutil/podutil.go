// Package podutil holds the small facts about a pod that many packages ask: the annotations
// nodelet's sources set, whether a pod is static, a mirror or critical, finding a container by
// name, and the bare form of an API container ID. It imports nothing of nodelet.
package podutil

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Source names, also the value of the kubernetes.io/config.source annotation.
const (
	FileSource = "file"
	HTTPSource = "http"
	APISource  = "api"
)

// Annotations nodelet sets on pods from its sources.
const (
	AnnotationSource = "kubernetes.io/config.source"
	AnnotationHash   = "kubernetes.io/config.hash"
	AnnotationSeen   = "kubernetes.io/config.seen"
	AnnotationMirror = "kubernetes.io/config.mirror"
)

// SystemCriticalPriority is the lowest priority of system-critical pods
// (system-cluster-critical).
const SystemCriticalPriority = 2000000000

// IsStatic reports whether pod came from a static source (file or URL).
func IsStatic(pod *v1.Pod) bool {
	s := pod.Annotations[AnnotationSource]
	return s == FileSource || s == HTTPSource
}

// IsMirror reports whether pod is a mirror pod.
func IsMirror(pod *v1.Pod) bool {
	_, ok := pod.Annotations[AnnotationMirror]
	return ok
}

// IsCritical: static, mirror and system-critical pods, which node pressure never evicts.
func IsCritical(pod *v1.Pod) bool {
	if IsStatic(pod) || IsMirror(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// FindContainer returns pod's init or app container called name, or nil.
func FindContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// FindAnyContainer is FindContainer that also finds an ephemeral container.
func FindAnyContainer(pod *v1.Pod, name string) *v1.Container {
	if c := FindContainer(pod, name); c != nil {
		return c
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}

// BareContainerID strips the "<runtime>://" prefix of an API container ID; an ID without one
// is returned as is.
func BareContainerID(id string) string {
	if _, bare, ok := strings.Cut(id, "://"); ok {
		return bare
	}
	return id
}
