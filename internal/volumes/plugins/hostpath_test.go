package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestHostPathVolumes(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	dirOrCreate, fileOrCreate, mustExist := v1.HostPathDirectoryOrCreate, v1.HostPathFileOrCreate, v1.HostPathDirectory
	pod := mounting("hp",
		v1.Volume{Name: "d", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(dir, "new/dir"), Type: &dirOrCreate}}},
		v1.Volume{Name: "f", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(dir, "new/file"), Type: &fileOrCreate}}},
	)
	if err := e.mount(pod); err != nil {
		t.Fatal(err)
	}
	for name, sub := range map[string]string{"d": "sub", "f": ""} {
		path, _, err := e.vm.HostPath(pod, name)
		if sub != "" {
			path, _, err = e.vm.SubPath(pod, "c", 0, name, sub)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := e.vm.HostPath(pod, "undeclared"); err == nil {
		t.Error("undeclared: no error")
	}
	if _, _, err := e.vm.SubPath(pod, "c", 1, "d", "../escape"); err == nil {
		t.Error("subPath escaping the volume accepted")
	}
	missing := mounting("missing", v1.Volume{Name: "missing", VolumeSource: v1.VolumeSource{
		HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(dir, "nope"), Type: &mustExist}}})
	if _, err := e.setUp(missing, "missing"); err == nil {
		t.Error("missing: no error")
	}
	nfs := mounting("nfs", v1.Volume{Name: "nfs", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}})
	if err := e.mount(nfs); err == nil || !strings.Contains(err.Error(), "failed to process volumes=[nfs]: volume \"nfs\": unsupported volume type") {
		t.Errorf("nfs: %v", err)
	}
}
