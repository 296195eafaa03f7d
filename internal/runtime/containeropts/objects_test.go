package containeropts

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/podspec/objects"
	"github.com/nodelet/nodelet/internal/podspec/objects/objectstest"
)

func TestContainerEnvFromConfigMapsAndSecrets(t *testing.T) {
	objs := &objectstest.Fake{}
	objs.AddConfigMap("prod", "cfg", map[string]string{"mode": "fast", "LEVEL": "3", "has space": "x", "1digit": "y"})
	objs.AddSecret("prod", "creds", map[string]string{"user": "admin", "pass": "s3cret"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}}
	cmKey := func(name, key string, optional *bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
	}
	secKey := func(name, key string, optional *bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
	}
	c := &v1.Container{
		EnvFrom: []v1.EnvFromSource{
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			{Prefix: "S_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Optional: ptr.To(true)}},
		},
		Env: []v1.EnvVar{
			{Name: "mode", Value: "slow"}, // env overrides envFrom
			{Name: "MODE_CM", ValueFrom: cmKey("cfg", "mode", nil)},
			{Name: "USER", ValueFrom: secKey("creds", "user", nil)},
			{Name: "OPT_OBJ", ValueFrom: cmKey("missing", "k", ptr.To(true))},
			{Name: "OPT_KEY", ValueFrom: secKey("creds", "nokey", ptr.To(true))},
			{Name: "REF", Value: "$(S_user)@$(mode)"},
		},
	}
	envs, vars, err := ContainerEnv(context.Background(), EnvSource{Pod: pod, Objects: objects.NewLookups(objs)}, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"mode": "slow", "LEVEL": "3", "S_user": "admin", "S_pass": "s3cret",
		"MODE_CM": "fast", "USER": "admin", "REF": "admin@slow",
	}
	if !reflect.DeepEqual(vars, want) {
		t.Errorf("env =\n%v\nwant\n%v", vars, want)
	}
	if len(envs) != len(want) || envs[0].Key != "LEVEL" {
		t.Errorf("env order %v: envFrom keys come first, sorted", envs)
	}

	for name, env := range map[string]v1.EnvVar{
		"missing configMap": {Name: "X", ValueFrom: cmKey("missing", "k", nil)},
		"missing key":       {Name: "X", ValueFrom: cmKey("cfg", "nokey", ptr.To(false))},
		"missing secret":    {Name: "X", ValueFrom: secKey("nope", "k", nil)},
	} {
		_, _, err := ContainerEnv(context.Background(), EnvSource{Pod: pod, Objects: objects.NewLookups(objs)}, &v1.Container{Env: []v1.EnvVar{env}})
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	required := &v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}}}
	if _, _, err := ContainerEnv(context.Background(), EnvSource{Pod: pod, Objects: objects.NewLookups(objs)}, required); err == nil {
		t.Error("required envFrom secret that is missing: no error")
	}
}

func TestStandaloneObjectErrorNamesTheObject(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod"}}
	c := &v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "k", Optional: ptr.To(true)}}}}}
	_, _, err := ContainerEnv(context.Background(), EnvSource{Pod: pod}, c)
	if err == nil || !strings.Contains(err.Error(), "configMap prod/cfg: no API server (standalone)") {
		t.Errorf("err = %v", err)
	}
}
