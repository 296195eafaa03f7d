package subpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/volumes/mount"
)

// Bind makes target, a path nodelet owns, the bind mount of what src (from Open) holds: a
// file or a directory to match. A target that is already that mount (a container started
// again) is kept; any other mount there goes first.
func Bind(m mount.Mounter, src *os.File, target string) error {
	var want unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &want); err != nil {
		return err
	}
	mounted, err := m.IsMountPoint(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		mounted = false
	case err != nil:
		return err
	case mounted && sameFile(target, &want):
		return nil
	case mounted:
		if err := unmountAt(m, target); err != nil {
			return err
		}
	}
	isDir := want.Mode&unix.S_IFMT == unix.S_IFDIR
	if err := makeTarget(target, isDir); err != nil {
		return err
	}
	return m.BindFd(src, target)
}

// sameFile reports whether path (not followed) is the file want describes.
func sameFile(path string, want *unix.Stat_t) bool {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false
	}
	return st.Dev == want.Dev && st.Ino == want.Ino
}

// unmountAt unmounts every mount stacked on target.
func unmountAt(m mount.Mounter, target string) error {
	for range 100 {
		mounted, err := m.IsMountPoint(target)
		if err != nil || !mounted {
			return err
		}
		if err := m.Unmount(target); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s stays mounted after 100 unmounts", target)
}

// makeTarget leaves an empty directory or file at target, replacing one of the other kind.
func makeTarget(target string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if st, err := os.Lstat(target); err == nil {
		if st.IsDir() == dir && (dir || st.Mode().IsRegular()) {
			return nil
		}
		// os.Remove neither follows a symlink nor removes a directory that is not empty.
		if err := os.Remove(target); err != nil {
			return err
		}
	}
	if dir {
		return os.Mkdir(target, 0o750)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// Clean unmounts and removes the subPath mounts under dir, laid out as
// dir/<container>/<mount index>, then dir. It only ever removes empty directories and the
// empty files Bind made, by name without following links, and nothing while a mount is left
// below dir: the content of a volume can never go with it.
func Clean(m mount.Mounter, dir string) error {
	if err := mount.UnmountAll(m, dir); err != nil {
		return err
	}
	left, err := m.MountsUnder(dir)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("still mounted after unmounting: %v", left)
	}
	containers, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range containers {
		cdir := filepath.Join(dir, c.Name())
		if c.IsDir() { // ReadDir's type is Lstat's: a symlink is not entered
			entries, err := os.ReadDir(cdir)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if err := os.Remove(filepath.Join(cdir, e.Name())); err != nil {
					return err
				}
			}
		}
		if err := os.Remove(cdir); err != nil {
			return err
		}
	}
	klog.V(3).InfoS("Removed subPath mounts", "path", dir)
	return os.Remove(dir)
}
