package kuberuntime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/volumes/mount"
	"github.com/nodelet/nodelet/internal/volumes/volumestest"
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

// With the real volume manager: a subPath that a planted symlink leads out of the volume
// fails its container with CreateContainerConfigError naming the subPath, and a Failed event;
// the pod's other container starts with its subPaths (one through a symlink inside the
// volume) bind-mounted from the pod's directory, one path per mount.
func TestSubPathOutOfTheVolumeFailsOnlyItsContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("subPath bind mounts need root: run this test as root to cover them")
	}
	var vols volumestest.OnDemand
	e := newTestEnv(t, func(o *Options) { vols = volumestest.Start(t, o.RootDir); o.Volumes = vols })
	t.Cleanup(func() { _ = mount.UnmountAll(mount.Host{}, e.rootDir) })
	bad, good := ctr("bad", "sleep", "3600"), ctr("good", "sleep", "3600")
	bad.VolumeMounts = []v1.VolumeMount{{Name: "vol", MountPath: "/host", SubPath: "escape"}}
	good.VolumeMounts = []v1.VolumeMount{
		{Name: "vol", MountPath: "/data", SubPath: "data"},
		{Name: "vol", MountPath: "/etc/app.conf", SubPath: "link/app.conf"},
	}
	pod := newPod("sub", bad, good)
	pod.Spec.Volumes = []v1.Volume{{Name: "vol", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	vol, _, err := vols.HostPath(pod, "vol")
	if err != nil {
		t.Fatal(err)
	}
	// What an init container could have left in the volume.
	if err := os.MkdirAll(filepath.Join(vol, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "data", "app.conf"), []byte("conf"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"escape": "/", "link": "data"} {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}

	res := e.sync(pod)
	w := res.Waiting["bad"]
	if w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, `subPath "escape"`) {
		t.Errorf("bad waits with %+v, want CreateContainerConfigError naming subPath \"escape\"", w)
	}
	want := `Warning Failed Error: failed to prepare subPath for volumeMount "vol" of container "bad": subPath "escape"`
	if evs := e.events(); !slices.ContainsFunc(evs, func(ev string) bool { return strings.HasPrefix(ev, want) }) {
		t.Errorf("events %q lack %q", evs, want)
	}
	if len(e.containersNamed("bad")) != 0 {
		t.Error("bad was created")
	}
	hostPaths := map[string]string{}
	for _, m := range e.running("good").Config.Mounts {
		hostPaths[m.ContainerPath] = m.HostPath
	}
	subpaths := filepath.Join(e.rootDir, "pods", string(pod.UID), "volume-subpaths", "vol", "good")
	if hostPaths["/data"] != filepath.Join(subpaths, "0") || hostPaths["/etc/app.conf"] != filepath.Join(subpaths, "1") {
		t.Errorf("good's mounts %v, want its subPaths under %s", hostPaths, subpaths)
	}
	if data, err := os.ReadFile(hostPaths["/etc/app.conf"]); err != nil || string(data) != "conf" {
		t.Errorf("app.conf through its subPath mount: %q %v", data, err)
	}
}
