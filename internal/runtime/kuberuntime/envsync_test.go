package kuberuntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/objects/objectstest"
)

func TestSyncPodEnvFromMissingConfigMapIsConfigError(t *testing.T) {
	objs := &objectstest.Fake{}
	e := newTestEnv(t, func(o *Options) { o.Objects = objs })
	c := ctr("app", "sleep", "3600")
	c.Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "k"}}}}
	pod := newPod("envpod", c)
	res := e.sync(pod)
	if w := res.Waiting["app"]; w.Reason != ReasonCreateContainerConfigError {
		t.Fatalf("waiting = %+v, want %s", w, ReasonCreateContainerConfigError)
	}
	objs.AddConfigMap("default", "cfg", map[string]string{"k": "v"})
	if res := e.sync(pod); res.Err != nil {
		t.Fatal(res.Err)
	}
	envs := e.running("app").Config.Envs
	found := false
	for _, kv := range envs {
		found = found || (kv.Key == "X" && kv.Value == "v")
	}
	if !found {
		t.Errorf("env %v lacks X=v", envs)
	}
}
