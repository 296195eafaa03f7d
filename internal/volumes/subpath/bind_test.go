package subpath

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodelet/nodelet/internal/volumes/mount"
	"github.com/nodelet/nodelet/internal/volumes/mount/mounttest"
)

// asRoot skips a test that mounts for real unless it runs as root.
func asRoot(t *testing.T) mount.Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root: run this package's tests as root to cover them")
	}
	return mount.Host{}
}

// mountsAt counts the mounts stacked at path.
func mountsAt(t *testing.T, path string) int {
	t.Helper()
	points, err := mount.ReadPoints(mount.Mountinfo)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range points {
		if p == path {
			n++
		}
	}
	return n
}

// A resolved file and directory are mounted on targets of their kind under the pod's
// directory, once however often a container starts; a target whose subPath now resolves to
// something else is mounted again; Clean unmounts and removes the targets and leaves the
// volume's content alone.
func TestBindAndClean(t *testing.T) {
	m := asRoot(t)
	root, _ := volume(t)
	subpaths := filepath.Join(t.TempDir(), "volume-subpaths", "vol")
	t.Cleanup(func() { _ = mount.UnmountAll(m, subpaths) })
	bind := func(path, target string) {
		t.Helper()
		f, err := Open(root, path, false)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := Bind(m, f, target); err != nil {
			t.Fatalf("Bind(%s): %v", path, err)
		}
	}
	dirTarget, fileTarget := filepath.Join(subpaths, "app", "0"), filepath.Join(subpaths, "app", "1")
	bind("rel", dirTarget)
	bind("data/app.conf", fileTarget)
	bind("rel", dirTarget) // the container starts again
	if st, err := os.Stat(dirTarget); err != nil || !st.IsDir() {
		t.Errorf("directory target: %v", err)
	}
	if data, err := os.ReadFile(fileTarget); err != nil || string(data) != "conf" {
		t.Errorf("file target reads %q, %v; want the volume's file", data, err)
	}
	if err := os.WriteFile(filepath.Join(dirTarget, "written"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "data/logs/written")); err != nil {
		t.Errorf("a write through the directory target is not in the volume: %v", err)
	}
	if n := mountsAt(t, dirTarget); n != 1 {
		t.Errorf("%d mounts at the directory target after two starts, want 1", n)
	}
	bind("real", dirTarget) // the subPath now names another directory
	if n := mountsAt(t, dirTarget); n != 1 {
		t.Errorf("%d mounts at the directory target after it changed, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(dirTarget, "written")); !os.IsNotExist(err) {
		t.Errorf("the target still shows the old directory: %v", err)
	}
	bind("data", fileTarget) // a file target that must become a directory
	if st, err := os.Stat(filepath.Join(fileTarget, "app.conf")); err != nil || st.IsDir() {
		t.Errorf("the former file target does not show the directory: %v", err)
	}

	if err := Clean(m, subpaths); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(subpaths); !os.IsNotExist(err) {
		t.Errorf("subPath directory left: %v", err)
	}
	if left, _ := m.MountsUnder(filepath.Dir(subpaths)); len(left) != 0 {
		t.Errorf("mounts left: %v", left)
	}
	for _, f := range []string{"data/app.conf", "data/logs/written"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("volume content lost: %v", err)
		}
	}
	if err := Clean(m, subpaths); err != nil {
		t.Errorf("cleaning again: %v", err)
	}
}

// Clean never follows a symlink: one planted where a target would be is removed, not what
// it points to; and a directory that is not empty (not a target Bind made) stops it.
func TestCleanFollowsNoSymlink(t *testing.T) {
	root, _ := volume(t)
	subpaths := filepath.Join(t.TempDir(), "vol")
	if err := os.MkdirAll(filepath.Join(subpaths, "app"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "data"), filepath.Join(subpaths, "app", "0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(subpaths, "linked")); err != nil {
		t.Fatal(err)
	}
	fake := mounttest.New()
	if err := Clean(fake, subpaths); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "data/app.conf")); err != nil {
		t.Errorf("volume content lost through a symlink: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(subpaths, "app", "0"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(subpaths, "app", "0", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Clean(fake, subpaths); err == nil {
		t.Error("Clean removed a directory with content")
	}
	if _, err := os.Stat(filepath.Join(subpaths, "app", "0", "f")); err != nil {
		t.Errorf("content under a target removed: %v", err)
	}
}

// Clean unmounts before it removes anything, and a mount it cannot take away keeps every
// file where it is.
func TestCleanUnmountsFirst(t *testing.T) {
	subpaths := filepath.Join(t.TempDir(), "vol")
	target := filepath.Join(subpaths, "app", "0")
	if err := os.MkdirAll(target, 0o750); err != nil {
		t.Fatal(err)
	}
	fake := mounttest.New()
	fake.Mount(target)
	if err := Clean(fake, subpaths); err != nil {
		t.Fatal(err)
	}
	if len(fake.Snapshot()) != 0 {
		t.Errorf("still mounted: %v", fake.Snapshot())
	}
	if _, err := os.Lstat(subpaths); !os.IsNotExist(err) {
		t.Errorf("left: %v", err)
	}
}
