package sidecar

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestFold(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	c := func(name, cpu string, sidecar bool) v1.Container {
		out := v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}
		if sidecar {
			out.RestartPolicy = &always
		}
		return out
	}
	cases := []struct {
		name  string
		inits []v1.Container
		apps  []v1.Container
		want  int64 // millicores
	}{
		{"apps only", nil, []v1.Container{c("a", "100m", false), c("b", "200m", false)}, 300},
		{"init peak", []v1.Container{c("i", "1", false)}, []v1.Container{c("a", "100m", false)}, 1000},
		{"sidecar beside apps", []v1.Container{c("s", "250m", true)}, []v1.Container{c("a", "100m", false)}, 350},
		// init2 runs beside s1 only: 100 + 900; the app beside both sidecars: 100 + 50 + 200.
		{"init after a sidecar", []v1.Container{c("s1", "100m", true), c("i2", "900m", false), c("s2", "50m", true)},
			[]v1.Container{c("a", "200m", false)}, 1000},
		// An init container before the sidecar does not run beside it.
		{"init before a sidecar", []v1.Container{c("i1", "300m", false), c("s1", "200m", true)},
			[]v1.Container{c("a", "50m", false)}, 300},
	}
	for _, tc := range cases {
		pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.inits, Containers: tc.apps}}
		got := Fold(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })[v1.ResourceCPU]
		if got.MilliValue() != tc.want {
			t.Errorf("%s: %dm, want %dm", tc.name, got.MilliValue(), tc.want)
		}
	}
}

func TestIs(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	if Is(nil) || Is(&v1.Container{}) || !Is(&v1.Container{RestartPolicy: &always}) {
		t.Error("Is: only an init container with restartPolicy Always is a sidecar")
	}
	if !Has(&v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{}, {RestartPolicy: &always}}}}) || Has(&v1.Pod{}) {
		t.Error("Has")
	}
}

func TestLongRunning(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always}, {Name: "log", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}, {Name: "web"}},
	}}
	var names []string
	for _, c := range LongRunning(pod) {
		names = append(names, c.Name)
	}
	if got := fmt.Sprint(names); got != "[proxy log app web]" {
		t.Errorf("LongRunning = %s, want the sidecars then the app containers", got)
	}
	LongRunning(pod)[0].Image = "changed"
	if pod.Spec.InitContainers[1].Image != "changed" {
		t.Error("LongRunning must point into the pod's spec")
	}
}
