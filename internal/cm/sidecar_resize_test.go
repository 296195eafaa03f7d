package cm

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A resize computes the pod cgroup's settings with the sidecar rule, as its creation does:
// the cgroup made for a pod with a sidecar reads back as the pod's desired settings, and a
// resized sidecar moves them by its own change.
func TestPodConfigCountsSidecarsAsCreation(t *testing.T) {
	f := newFakeV1(t)
	m := startManager(t, f, Options{})
	always := v1.ContainerRestartPolicyAlways
	withSidecar := func(sidecarCPU string) *v1.Pod {
		pod := newPod("sc", v1.ResourceRequirements{Requests: resources("200m", "100Mi"), Limits: resources("200m", "100Mi")})
		pod.Spec.InitContainers = []v1.Container{{Name: "proxy", RestartPolicy: &always,
			Resources: v1.ResourceRequirements{Requests: resources(sidecarCPU, "50Mi"), Limits: resources(sidecarCPU, "50Mi")}}}
		return pod
	}
	pod := withSidecar("100m")
	if _, err := m.EnsurePod(pod); err != nil {
		t.Fatal(err)
	}
	current, desired, err := m.PodConfig(pod)
	if err != nil {
		t.Fatal(err)
	}
	if want := (PodConfig{CPUShares: 307, CPUQuota: 30000, Memory: 150 << 20}); current != want || desired != want {
		t.Errorf("current %+v desired %+v, want both %+v (app and sidecar)", current, desired, want)
	}
	if _, desired, err = m.PodConfig(withSidecar("300m")); err != nil {
		t.Fatal(err)
	}
	if want := (PodConfig{CPUShares: 512, CPUQuota: 50000, Memory: 150 << 20}); desired != want {
		t.Errorf("after the sidecar's resize: desired %+v, want %+v", desired, want)
	}
}
