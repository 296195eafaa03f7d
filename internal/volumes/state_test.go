package volumes

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A change to the actual state wakes whoever waits on it; a volume found at start or on its
// way out is not handed to containers; refreshes are counted per sync.
func TestActualState(t *testing.T) {
	a := newActualState()
	p := newFakePlugin()
	p.refresh = true
	k := volumeKey{"u1", "data"}
	changed := a.changes()
	a.markUncertain(k, p, "/d")
	select {
	case <-changed:
	default:
		t.Fatal("a change did not wake the waiters")
	}
	if _, ok := a.mount(k); ok {
		t.Error("a volume found at start is usable before it is set up again")
	}
	a.markSetUp(k, p, "/d", Mount{Path: "/d"}, 0)
	a.markUncertain(k, p, "/d") // a late reconstruction must not undo a SetUp
	if m, ok := a.mount(k); !ok || m.Path != "/d" {
		t.Fatalf("mount = %+v, %v", m, ok)
	}
	a.markRefreshWanted("u1")
	if v := a.volumes("u1")["data"]; v.refreshWanted != 1 || v.refreshed != 0 {
		t.Errorf("after a sync: wanted %d refreshed %d", v.refreshWanted, v.refreshed)
	}
	a.markTearingDown(k, true)
	if _, ok := a.mount(k); ok {
		t.Error("a volume being torn down is usable")
	}
	a.markTornDown(k)
	if len(a.all()) != 0 {
		t.Errorf("left: %v", a.all())
	}
}

// The desired state wants only the volumes a pod's containers use, and forgets the pod.
func TestDesiredStateWantsWhatContainersMount(t *testing.T) {
	e := newTestEnv(t, t.TempDir())
	pod := podWith("u1", "data")
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "unused", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	pod.Spec.InitContainers = []v1.Container{{Name: "init", VolumeMounts: []v1.VolumeMount{{Name: "seed"}}}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "seed", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	e.m.desired.set(e.m.resolve(t.Context(), pod))
	for name, want := range map[string]bool{"data": true, "seed": true, "unused": false} {
		if got := e.m.desired.wants("u1", name); got != want {
			t.Errorf("wants %s = %v, want %v", name, got, want)
		}
	}
	e.m.desired.remove("u1")
	if e.m.desired.wants("u1", "data") {
		t.Error("a removed pod is still wanted")
	}
}

// Volumes in use are those set up whose plugin named them, once each, sorted, until they are
// torn down.
func TestVolumesInUseListsNamedVolumesSetUp(t *testing.T) {
	m := New(Options{RootDir: t.TempDir()})
	p := newFakePlugin()
	m.actual.markSetUp(volumeKey{"u1", "a"}, p, "/a", Mount{Path: "/a", InUse: "kubernetes.io/csi/d^v2"}, 0)
	m.actual.markSetUp(volumeKey{"u2", "a"}, p, "/b", Mount{Path: "/b", InUse: "kubernetes.io/csi/d^v2"}, 0)
	m.actual.markSetUp(volumeKey{"u2", "b"}, p, "/c", Mount{Path: "/c", InUse: "kubernetes.io/csi/d^v1"}, 0)
	m.actual.markSetUp(volumeKey{"u2", "c"}, p, "/e", Mount{Path: "/e"}, 0)
	got := m.VolumesInUse()
	if len(got) != 2 || got[0] != "kubernetes.io/csi/d^v1" || got[1] != "kubernetes.io/csi/d^v2" {
		t.Fatalf("in use = %v", got)
	}
	m.actual.markTornDown(volumeKey{"u2", "b"})
	if got := m.VolumesInUse(); len(got) != 1 || got[0] != "kubernetes.io/csi/d^v2" {
		t.Fatalf("after a tear-down: %v", got)
	}
}

// A block volume is handed out only as a device, a filesystem volume only as a path.
func TestBlockVolumesAreDevicesOnly(t *testing.T) {
	m := New(Options{RootDir: t.TempDir()})
	p := newFakePlugin()
	pod := podWith("u1", "fs", "disk")
	m.actual.markSetUp(volumeKey{"u1", "fs"}, p, "/fs", Mount{Path: "/fs"}, 0)
	m.actual.markSetUp(volumeKey{"u1", "disk"}, p, "/d", Mount{Path: "/dev/loop7", Block: true}, 0)
	if dev, err := m.DevicePath(pod, "disk"); err != nil || dev != "/dev/loop7" {
		t.Fatalf("DevicePath(disk) = %q, %v", dev, err)
	}
	if _, _, err := m.HostPath(pod, "disk"); err == nil || err.Error() != "volume disk has volumeMode Block, but is specified in volumeMounts" {
		t.Fatalf("HostPath(disk): %v", err)
	}
	if _, err := m.DevicePath(pod, "fs"); err == nil || err.Error() != "volume fs has volumeMode Filesystem, but is specified in volumeDevices" {
		t.Fatalf("DevicePath(fs): %v", err)
	}
}
