package plugins

import (
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func gidOf(t *testing.T, path string) (uint32, os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Gid, st.Mode()
}

// With fsGroup an emptyDir and what is in it belong to the group, the directories setgid so
// new files inherit it; without, the directory is only world-writable.
func TestEmptyDirTakesTheFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary one needs root")
	}
	dir := filepath.Join(t.TempDir(), "vol")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	group := int64(4321)
	if err := prepareEmptyDir(dir, &group); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "sub"), filepath.Join(dir, "sub", "f")} {
		gid, mode := gidOf(t, p)
		if gid != 4321 || mode&0o060 != 0o060 {
			t.Errorf("%s: gid %d mode %v, want group 4321 with read/write", p, gid, mode)
		}
		if mode.IsDir() && mode&os.ModeSetgid == 0 {
			t.Errorf("%s: directory without setgid", p)
		}
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := prepareEmptyDir(plain, nil); err != nil {
		t.Fatal(err)
	}
	if _, mode := gidOf(t, plain); mode.Perm() != 0o777 || mode&os.ModeSetgid != 0 {
		t.Errorf("without fsGroup: mode %v, want 0777", mode)
	}
}

// A medium: Memory emptyDir gets a tmpfs of its size limit once; setting it up again (a
// restart) does not mount over what it holds; tearing it down unmounts and removes it.
func TestMemoryEmptyDirGetsTmpfsOnce(t *testing.T) {
	e := newEnv(t)
	limit := resource.MustParse("64Mi")
	pod := mounting("tmpfs",
		v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}},
		v1.Volume{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	)
	for range 2 {
		for _, name := range []string{"mem", "disk"} {
			if _, err := e.setUp(pod, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join(e.root, "pods", "uid-tmpfs", "volumes", emptyDirPlugin, "mem")
	if want := map[string]int64{dir: 64 << 20}; !reflect.DeepEqual(e.mounter.Snapshot(), want) {
		t.Errorf("tmpfs mounts = %v, want %v", e.mounter.Snapshot(), want)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir %s: %v, want world-writable", dir, err)
	}
	empty := &EmptyDir{mounter: e.mounter}
	if err := empty.TearDown(pod.UID, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) || len(e.mounter.Snapshot()) != 0 {
		t.Errorf("after TearDown: %v, mounts %v", err, e.mounter.Snapshot())
	}
}
