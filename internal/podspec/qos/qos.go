// Package qos computes a pod's quality-of-service class from its resource requests and limits.
package qos

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// computed resources: only cpu and memory decide the class.
var classResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// Class returns Guaranteed when every container sets equal cpu and memory limits and requests,
// BestEffort when none sets any, and Burstable otherwise. pod.spec.resources (pod-level) wins
// when set, as it does upstream.
func Class(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	guaranteed := true
	containers := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range containers {
		addAll(requests, c.Resources.Requests)
		addAll(limits, c.Resources.Limits)
		for _, name := range classResources {
			lim, ok := c.Resources.Limits[name]
			if !ok || lim.IsZero() {
				guaranteed = false
				continue
			}
			if req, ok := c.Resources.Requests[name]; ok && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed && len(limits) == len(classResources) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

func addAll(into, from v1.ResourceList) {
	for _, name := range classResources {
		q, ok := from[name]
		if !ok || q.IsZero() {
			continue
		}
		sum := into[name]
		if sum.Format == "" {
			sum = resource.Quantity{Format: q.Format}
		}
		sum.Add(q)
		into[name] = sum
	}
}
