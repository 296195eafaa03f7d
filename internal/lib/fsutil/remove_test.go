package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// layout makes root and a sibling "outside" directory holding a marker file.
func layout(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(outside, "marker"))
	return root, outside
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("%s is gone: %v", path, err)
	}
}

func mustBeGone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there (err %v)", path, err)
	}
}

func TestRemoveAllInRefusesUnsafeNames(t *testing.T) {
	root, outside := layout(t)
	write(t, filepath.Join(root, "x", "f"))
	for _, elems := range [][]string{{"../outside"}, {".."}, {"."}, {""}, {"x/.."}, {"a\x00b"}, {"x", "../../outside"}, {}} {
		err := RemoveAllIn(root, elems...)
		if err == nil || (len(elems) > 0 && !errors.Is(err, ErrUnsafeName)) {
			t.Errorf("RemoveAllIn(%q) = %v, want refused", elems, err)
		}
	}
	mustExist(t, filepath.Join(outside, "marker"))
	mustExist(t, filepath.Join(root, "x", "f"))
}

func TestRemoveAllInRemovesTreeWithoutFollowingLinks(t *testing.T) {
	root, outside := layout(t)
	pod := filepath.Join(root, "pod")
	write(t, filepath.Join(pod, "containers", "main", "abc"))
	write(t, filepath.Join(pod, "etc-hosts"))
	for link, target := range map[string]string{"out": outside, "file": filepath.Join(outside, "marker"), "dangling": "/nonexistent"} {
		if err := os.Symlink(target, filepath.Join(pod, "containers", link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveAllIn(root, "pod"); err != nil {
		t.Fatal(err)
	}
	mustBeGone(t, pod)
	mustExist(t, filepath.Join(outside, "marker"))
	if err := RemoveAllIn(root, "pod"); err != nil {
		t.Errorf("removing a missing path: %v", err)
	}
}

func TestRemoveAllInDoesNotFollowIntermediateSymlink(t *testing.T) {
	root, outside := layout(t)
	if err := os.Symlink(outside, filepath.Join(root, "pod")); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAllIn(root, "pod", "marker"); err == nil {
		t.Error("removed through a symlink")
	}
	mustExist(t, filepath.Join(outside, "marker"))
	// The symlink itself, as the last element, goes.
	if err := RemoveAllIn(root, "pod"); err != nil {
		t.Fatal(err)
	}
	mustBeGone(t, filepath.Join(root, "pod"))
	mustExist(t, filepath.Join(outside, "marker"))
}

func TestRemoveInKeepsNonEmptyDirectory(t *testing.T) {
	root, _ := layout(t)
	write(t, filepath.Join(root, "pod", "volumes", "v"))
	write(t, filepath.Join(root, "pod", "etc-hosts"))
	if err := RemoveIn(root, "pod", "etc-hosts"); err != nil {
		t.Fatal(err)
	}
	mustBeGone(t, filepath.Join(root, "pod", "etc-hosts"))
	if err := RemoveIn(root, "pod"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("err = %v, want ENOTEMPTY", err)
	}
	mustExist(t, filepath.Join(root, "pod", "volumes", "v"))
}

func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
}

func mount(t *testing.T, source, target, fstype string, flags uintptr) {
	t.Helper()
	if _, err := os.Stat(target); err != nil {
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(source, target, fstype, flags, ""); err != nil {
		t.Fatalf("mount %s on %s: %v", source, target, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
}

// A tmpfs (another st_dev) below the directory is not entered: its content and the
// directories above it stay, the rest goes, and the error names the mount.
func TestRemoveAllInStopsAtOtherFilesystem(t *testing.T) {
	requireRoot(t)
	root, _ := layout(t)
	vol := filepath.Join(root, "pod", "volumes", "kubernetes.io~empty-dir", "cache")
	mount(t, "tmpfs", vol, "tmpfs", 0)
	write(t, filepath.Join(vol, "data"))
	write(t, filepath.Join(root, "pod", "etc-hosts"))
	err := RemoveAllIn(root, "pod")
	if !errors.Is(err, ErrOtherFilesystem) {
		t.Fatalf("err = %v, want ErrOtherFilesystem", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != vol {
		t.Errorf("err = %v, want it to name %s", err, vol)
	}
	mustExist(t, filepath.Join(vol, "data"))
	mustBeGone(t, filepath.Join(root, "pod", "etc-hosts"))
}

// A bind mount of the same filesystem has the same st_dev; its mount ID still differs.
func TestRemoveAllInStopsAtBindMount(t *testing.T) {
	requireRoot(t)
	root, outside := layout(t)
	target := filepath.Join(root, "pod", "volume-subpaths", "v", "main", "0")
	mount(t, outside, target, "", unix.MS_BIND)
	err := RemoveAllIn(root, "pod")
	if !errors.Is(err, ErrOtherFilesystem) {
		t.Fatalf("err = %v, want ErrOtherFilesystem", err)
	}
	mustExist(t, filepath.Join(outside, "marker"))
	// A bind-mounted file is not removed either.
	file := filepath.Join(root, "pod2", "etc-hosts")
	write(t, file)
	mount(t, filepath.Join(outside, "marker"), file, "", unix.MS_BIND)
	if err := RemoveAllIn(root, "pod2"); !errors.Is(err, ErrOtherFilesystem) {
		t.Fatalf("err = %v, want ErrOtherFilesystem", err)
	}
	mustExist(t, filepath.Join(outside, "marker"))
}

// The directory named itself being a mount point is refused too.
func TestRemoveAllInRefusesMountPoint(t *testing.T) {
	requireRoot(t)
	root, _ := layout(t)
	vol := filepath.Join(root, "vol")
	mount(t, "tmpfs", vol, "tmpfs", 0)
	write(t, filepath.Join(vol, "data"))
	if err := RemoveAllIn(root, "vol"); !errors.Is(err, ErrOtherFilesystem) {
		t.Fatalf("err = %v, want ErrOtherFilesystem", err)
	}
	mustExist(t, filepath.Join(vol, "data"))
}
