package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func res(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func TestClass(t *testing.T) {
	cases := []struct {
		name     string
		req, lim v1.ResourceList
		want     v1.PodQOSClass
	}{
		{"none", nil, nil, v1.PodQOSBestEffort},
		{"equal", res("100m", "64Mi"), res("100m", "64Mi"), v1.PodQOSGuaranteed},
		{"limits only", nil, res("1", "1Gi"), v1.PodQOSGuaranteed},
		{"request below limit", res("50m", "64Mi"), res("100m", "64Mi"), v1.PodQOSBurstable},
		{"cpu only", res("100m", ""), res("100m", ""), v1.PodQOSBurstable},
		{"requests only", res("100m", "1Mi"), nil, v1.PodQOSBurstable},
	}
	for _, tc := range cases {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "c", Resources: v1.ResourceRequirements{Requests: tc.req, Limits: tc.lim},
		}}}}
		if got := Class(pod); got != tc.want {
			t.Errorf("%s: got %s want %s", tc.name, got, tc.want)
		}
	}
}

func TestClassNeedsEveryContainerGuaranteed(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "a", Resources: v1.ResourceRequirements{Limits: res("1", "1Gi")}},
		{Name: "b"},
	}}}
	if got := Class(pod); got != v1.PodQOSBurstable {
		t.Fatalf("got %s want Burstable", got)
	}
}

// Sidecars are containers like the others for the class (upstream sums every container, init
// and sidecar included, here): one without limits makes the pod Burstable.
func TestClassCountsSidecars(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	guaranteed := v1.ResourceRequirements{Limits: res("1", "1Gi")}
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "proxy", RestartPolicy: &always, Resources: guaranteed}},
		Containers:     []v1.Container{{Name: "app", Resources: guaranteed}},
	}}
	if got := Class(pod); got != v1.PodQOSGuaranteed {
		t.Errorf("got %s want Guaranteed", got)
	}
	pod.Spec.InitContainers[0].Resources = v1.ResourceRequirements{}
	if got := Class(pod); got != v1.PodQOSBurstable {
		t.Errorf("with an unlimited sidecar: got %s want Burstable", got)
	}
}
