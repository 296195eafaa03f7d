package runtime

import (
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// subPathExpr expands from the container's environment into a directory of the volume; an
// absolute result, a '..' step, backticks or an unset variable fail the container with
// CreateContainerConfigError and upstream's messages.
func TestSubPathExpr(t *testing.T) {
	for _, tc := range []struct {
		name, expr, value, wantErr string
	}{
		{"expanded", "logs/$(POD_NAME)", "", ""},
		{"absolute", "$(DIR)", "/etc", "error SubPath `/etc` must not be an absolute path"},
		{"backsteps", "a/$(DIR)", "../..", "unable to provision SubPath `a/../..`: must not contain '..'"},
		{"backticks", "`id`", "", "must not contain backticks"},
		{"unset", "$(NOPE)/x", "", "missing value for NOPE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			c := ctr("app")
			c.Env = []v1.EnvVar{
				{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "DIR", Value: tc.value},
			}
			c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/out", SubPathExpr: tc.expr}}
			pod := newPod("sub", c)
			pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			res := e.sync(pod)
			if tc.wantErr != "" {
				w := res.Waiting["app"]
				if w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, tc.wantErr) {
					t.Fatalf("waiting %+v, want CreateContainerConfigError with %q", w, tc.wantErr)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			var host string
			for _, m := range e.running("app").Config.Mounts {
				if m.ContainerPath == "/out" {
					host = m.HostPath
				}
			}
			if filepath.Base(host) != pod.Name || filepath.Base(filepath.Dir(host)) != "logs" {
				t.Errorf("mounted %q, want the volume's logs/%s", host, pod.Name)
			}
		})
	}
}
