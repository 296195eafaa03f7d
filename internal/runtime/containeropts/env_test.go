package containeropts

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/podspec/objects"
	"github.com/nodelet/nodelet/internal/podspec/objects/objectstest"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"x$(A)y$(B)z", "xalphaybetaz"},
		{"$(EMPTY)-", "-"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$$", "$"},
		{"$A", "$A"},
		{"$", "$"},
		{"a$", "a$"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$(A)$(B", "alpha$(B"},
		{"cost: $$5", "cost: $5"},
	}
	for _, tt := range tests {
		if got := ExpandVars(tt.in, lookup); got != tt.want {
			t.Errorf("ExpandVars(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestContainerEnvSources(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "prod", UID: "u1",
			Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"team": "a"},
		},
		Spec: v1.PodSpec{ServiceAccountName: "sa", Containers: []v1.Container{{Name: "other",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("256Mi")}}}}},
	}
	field := func(p string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: p}}
	}
	res := func(r, divisor, container string) *v1.EnvVarSource {
		sel := &v1.ResourceFieldSelector{Resource: r, ContainerName: container}
		if divisor != "" {
			sel.Divisor = resource.MustParse(divisor)
		}
		return &v1.EnvVarSource{ResourceFieldRef: sel}
	}
	optional := true
	c := &v1.Container{
		Name: "app",
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		},
		Env: []v1.EnvVar{
			{Name: "NAME", ValueFrom: field("metadata.name")},
			{Name: "NS", ValueFrom: field("metadata.namespace")},
			{Name: "UID", ValueFrom: field("metadata.uid")},
			{Name: "APP", ValueFrom: field("metadata.labels['app']")},
			{Name: "TEAM", ValueFrom: field("metadata.annotations['team']")},
			{Name: "LABELS", ValueFrom: field("metadata.labels")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
			{Name: "IP", ValueFrom: field("status.podIP")},
			{Name: "IPS", ValueFrom: field("status.podIPs")},
			{Name: "HOST", ValueFrom: field("status.hostIP")},
			{Name: "CPU_LIMIT", ValueFrom: res("limits.cpu", "", "")},
			{Name: "CPU_REQ_M", ValueFrom: res("requests.cpu", "1m", "")},
			{Name: "MEM_LIMIT_MI", ValueFrom: res("limits.memory", "1Mi", "")},
			{Name: "OTHER_MEM", ValueFrom: res("limits.memory", "1Mi", "other")},
			{Name: "NODE_MEM", ValueFrom: res("limits.memory", "", "other-missing-limit")},
			{Name: "OPT", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{Key: "k", Optional: &optional}}},
			{Name: "REF", Value: "$(NAME).$(NS)"},
		},
	}
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "other-missing-limit"})
	ec := EnvSource{Pod: pod, PodIPs: []string{"10.85.0.9", "fd00::9"}, NodeName: "node-1", HostIP: "192.168.1.10",
		Capacity: downward.Capacity{MilliCPU: 2000, MemoryBytes: 4 << 30}, Objects: objects.NewLookups(&objectstest.Fake{})}
	_, vars, err := ContainerEnv(context.Background(), ec, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"NAME": "web", "NS": "prod", "UID": "u1", "APP": "web", "TEAM": "a",
		"LABELS": "app=\"web\"\ntier=\"front\"", "NODE": "node-1", "SA": "sa",
		"IP": "10.85.0.9", "IPS": "10.85.0.9,fd00::9", "HOST": "192.168.1.10",
		"CPU_LIMIT": "2", "CPU_REQ_M": "250", "MEM_LIMIT_MI": "128", "OTHER_MEM": "256",
		"NODE_MEM": "4294967296", "REF": "web.prod",
	}
	if !reflect.DeepEqual(vars, want) {
		t.Errorf("env =\n%v\nwant\n%v", vars, want)
	}
}

func TestContainerEnvRejectsUnsupportedAndStandaloneSources(t *testing.T) {
	ec := EnvSource{Pod: &v1.Pod{}}
	for name, c := range map[string]*v1.Container{
		"standalone secretKeyRef": {Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}}}},
		"standalone envFrom":      {EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{}}}},
		"bad field":               {Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}},
	} {
		if _, _, err := ContainerEnv(context.Background(), ec, c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestServiceVariablesComeFirstAndCanBeOverridden(t *testing.T) {
	ec := EnvSource{Pod: &v1.Pod{}, Services: []v1.EnvVar{
		{Name: "DB_SERVICE_HOST", Value: "10.0.0.5"}, {Name: "DB_SERVICE_PORT", Value: "5432"},
	}}
	c := &v1.Container{Env: []v1.EnvVar{
		{Name: "DB_SERVICE_PORT", Value: "6432"},
		{Name: "DSN", Value: "postgres://$(DB_SERVICE_HOST):$(DB_SERVICE_PORT)"},
	}}
	kvs, vars, err := ContainerEnv(context.Background(), ec, c)
	if err != nil {
		t.Fatal(err)
	}
	if kvs[0].Key != "DB_SERVICE_HOST" || vars["DB_SERVICE_PORT"] != "6432" || vars["DSN"] != "postgres://10.0.0.5:6432" {
		t.Fatalf("env %v", vars)
	}
}
