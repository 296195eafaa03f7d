package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/volumes"
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
	if err := empty.TearDown(context.Background(), pod.UID, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) || len(e.mounter.Snapshot()) != 0 {
		t.Errorf("after TearDown: %v, mounts %v", err, e.mounter.Snapshot())
	}
}

// As upstream: a memory-backed emptyDir's tmpfs is the node's allocatable memory, or the
// pod's memory limit (overhead included, only when every container has one) when smaller, or
// sizeLimit when smaller still.
func TestMemoryEmptyDirSizedAsUpstream(t *testing.T) {
	e := newEnv(t, func(d *Deps, _ *volumes.Options) {
		d.AllocatableMemory = func() int64 { return 1 << 30 }
		d.PodMemoryLimit = cm.PodMemoryLimit
	})
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	limited := func(c *v1.Container, mem string) {
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: *q(mem)}
	}
	tests := []struct {
		name      string
		sizeLimit *resource.Quantity
		shape     func(*v1.Pod)
		want      int64
	}{
		{name: "no limits: the node's allocatable", want: 1 << 30},
		{name: "the pod's limit", shape: func(p *v1.Pod) { limited(&p.Spec.Containers[0], "128Mi") }, want: 128 << 20},
		{name: "the pod's limit with its overhead", want: 160 << 20, shape: func(p *v1.Pod) {
			limited(&p.Spec.Containers[0], "128Mi")
			p.Spec.Overhead = v1.ResourceList{v1.ResourceMemory: *q("32Mi")}
		}},
		{name: "one container unlimited: the pod is not limited", want: 1 << 30, shape: func(p *v1.Pod) {
			limited(&p.Spec.Containers[0], "128Mi")
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "other"})
		}},
		{name: "init container's peak", want: 512 << 20, shape: func(p *v1.Pod) {
			limited(&p.Spec.Containers[0], "128Mi")
			p.Spec.InitContainers = []v1.Container{{Name: "init"}}
			limited(&p.Spec.InitContainers[0], "512Mi")
		}},
		{name: "a limit above allocatable", shape: func(p *v1.Pod) { limited(&p.Spec.Containers[0], "2Gi") }, want: 1 << 30},
		{name: "sizeLimit below the pod's limit", sizeLimit: q("64Mi"), shape: func(p *v1.Pod) { limited(&p.Spec.Containers[0], "128Mi") }, want: 64 << 20},
		{name: "sizeLimit above the pod's limit", sizeLimit: q("256Mi"), shape: func(p *v1.Pod) { limited(&p.Spec.Containers[0], "128Mi") }, want: 128 << 20},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := mounting(fmt.Sprintf("size%d", i), v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{
				EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: tt.sizeLimit}}})
			if tt.shape != nil {
				tt.shape(pod)
			}
			if _, err := e.setUp(pod, "mem"); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(e.root, "pods", string(pod.UID), "volumes", emptyDirPlugin, "mem")
			if got := e.mounter.Snapshot()[dir]; got != tt.want {
				t.Errorf("tmpfs size %d, want %d", got, tt.want)
			}
		})
	}
}

// The volumes upstream relabels on an SELinux host: the ones it manages whose files carry
// labels (emptyDir, configMap, secret, downwardAPI, projected), never a hostPath.
func TestPluginsSayWhichVolumesAreRelabelled(t *testing.T) {
	e := newEnv(t)
	e.objs.AddConfigMap("default", "cm", map[string]string{"k": "v"})
	hostDir := t.TempDir()
	pod := mounting("relabel",
		v1.Volume{Name: "empty", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
		v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}},
	)
	for name, want := range map[string]bool{"empty": true, "cm": true, "host": false} {
		mnt, err := e.setUp(pod, name)
		if err != nil {
			t.Fatal(err)
		}
		if mnt.SELinuxRelabel != want {
			t.Errorf("%s: SELinuxRelabel %v, want %v", name, mnt.SELinuxRelabel, want)
		}
	}
}
