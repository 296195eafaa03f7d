package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/volumes/mount/mounttest"
)

// stuckMounter cannot unmount while stuck.
type stuckMounter struct {
	*mounttest.Fake
	stuck bool
}

func (s *stuckMounter) Unmount(dir string) error {
	if s.stuck {
		return errors.New("device busy")
	}
	return s.Fake.Unmount(dir)
}

func withMounter(m *stuckMounter) func(*Options) { return func(o *Options) { o.Mounter = m } }

// A subPath is mounted on a path of the pod's directory per container and mount index, made
// with the volume's mode when missing; one that leads out of the volume through a planted symlink is
// refused with a message naming the volume mount, the container and the subPath, and
// nothing of the host's.
func TestSubPathMountsInsideTheVolume(t *testing.T) {
	mounter := &stuckMounter{Fake: mounttest.New()}
	e := newTestEnv(t, t.TempDir(), withMounter(mounter))
	e.run(t)
	pod := podWith("u1", "data")
	if err := e.m.WaitForAttachAndMount(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	vol := e.volumeDir("u1", "data")
	if err := os.Chmod(vol, 0o750); err != nil {
		t.Fatal(err)
	}
	path, ro, err := e.m.SubPath(pod, "app", 2, "data", "logs/app")
	if err != nil || ro {
		t.Fatalf("SubPath = %q %v %v", path, ro, err)
	}
	if want := filepath.Join(e.root, "pods/u1/volume-subpaths/data/app/2"); path != want {
		t.Errorf("mounted on %s, want %s", path, want)
	}
	if ok, _ := mounter.IsMountPoint(path); !ok {
		t.Errorf("%s is not mounted", path)
	}
	if st, err := os.Stat(filepath.Join(vol, "logs/app")); err != nil || st.Mode().Perm() != 0o750 {
		t.Errorf("subPath directory: %v %v, want the volume's 0750", st.Mode(), err)
	}

	hostDir := t.TempDir()
	if err := os.Symlink("/", filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostDir, filepath.Join(vol, "x")); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"escape", "escape/etc", "x/newdir"} {
		_, _, err := e.m.SubPath(pod, "app", 0, "data", sub)
		want := `failed to prepare subPath for volumeMount "data" of container "app": subPath "` + sub + `": it leads out of the volume`
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("SubPath(%s) = %v, want %q...", sub, err, want)
		}
		if err != nil && strings.Contains(err.Error(), hostDir) {
			t.Errorf("the error shows a host path: %v", err)
		}
	}
	if entries, _ := os.ReadDir(hostDir); len(entries) != 0 {
		t.Errorf("made %v on the host", entries)
	}
	if _, _, err := e.m.SubPath(pod, "../app", 0, "data", "logs"); err == nil {
		t.Error("a container name with a slash was used in a path")
	}
}

// A volume's subPath mounts go before the volume: while one cannot be unmounted the volume
// stays set up, and once it can, both go and the pod's directory can be removed.
func TestSubPathMountsGoBeforeTheVolume(t *testing.T) {
	mounter := &stuckMounter{Fake: mounttest.New()}
	e := newTestEnv(t, t.TempDir(), withMounter(mounter))
	pod := podWith("u1", "data")
	e.m.want(t.Context(), pod)
	e.reconcile()
	target, _, err := e.m.SubPath(pod, "app", 0, "data", "sub")
	if err != nil {
		t.Fatal(err)
	}
	e.m.desired.remove("u1")
	e.pods.setGone("u1")
	mounter.stuck = true
	e.reconcile()
	if got := e.plugin.tornDown(); len(got) != 0 {
		t.Fatalf("volume torn down %v while its subPath is still mounted", got)
	}
	if err := e.m.RemovePodDir("u1"); err == nil {
		t.Fatal("pod directory removed with a volume set up")
	}
	mounter.stuck = false
	e.clock.Step(retryBackoff.Cap)
	e.reconcile()
	if got := e.plugin.tornDown(); !slices.Equal(got, []string{e.volumeDir("u1", "data")}) {
		t.Fatalf("torn down %v", got)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("subPath target left: %v", err)
	}
	if err := e.m.RemovePodDir("u1"); err != nil {
		t.Fatal(err)
	}
}

// After a restart the subPath mounts of a pod that went away meanwhile go with its
// reconstructed volumes; those of a volume that is gone go at once; those of a volume of a
// plugin nodelet lacks stay with it; a pod still wanted keeps its own.
func TestSubPathMountsAfterRestart(t *testing.T) {
	root := t.TempDir()
	mounter := &stuckMounter{Fake: mounttest.New()}
	targets := map[string]string{}
	plugins := map[string]string{"data": fakePluginName, "old": fakePluginName, "alien": "example.com~other"}
	for _, p := range []struct{ uid, vol string }{{"kept", "data"}, {"gone", "old"}, {"gone", "foreign"}, {"gone", "alien"}} {
		if plugin := plugins[p.vol]; plugin != "" { // foreign: its volume went, its subPath did not
			if err := os.MkdirAll(filepath.Join(root, "pods", p.uid, "volumes", plugin, p.vol), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		target := filepath.Join(root, "pods", p.uid, "volume-subpaths", p.vol, "app", "0")
		if err := os.MkdirAll(target, 0o750); err != nil {
			t.Fatal(err)
		}
		mounter.Mount(target)
		targets[p.uid+"/"+p.vol] = target
	}
	e := newTestEnv(t, root, withMounter(mounter))
	if ok, _ := mounter.IsMountPoint(targets["gone/foreign"]); ok {
		t.Error("the subPath mount of a volume that is gone is still mounted after the start")
	}
	if ok, _ := mounter.IsMountPoint(targets["gone/alien"]); !ok {
		t.Error("the subPath mount of another plugin's volume went")
	}
	e.m.want(t.Context(), podWith("kept", "data"))
	e.pods.setGone("gone")
	e.reconcile()
	if ok, _ := mounter.IsMountPoint(targets["kept/data"]); !ok {
		t.Error("a wanted pod's subPath mount went")
	}
	if ok, _ := mounter.IsMountPoint(targets["gone/old"]); ok {
		t.Error("a gone pod's subPath mount stayed")
	}
	if err := e.m.RemovePodDir("gone"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := mounter.IsMountPoint(targets["gone/alien"]); ok {
		t.Error("RemovePodDir removed the pod's directory but left a subPath mount")
	}
}
