// Package fsutil removes what nodelet created below its own directories without ever leaving
// them.
//
// That is pod directories, pod log directories and volume directories: names that come from
// pods must be single path components, symlinks are never followed, and nothing on another
// filesystem or mount (a volume still mounted, a bind mount a container propagated) is entered.
//
// It walks with file descriptors (openat with O_NOFOLLOW, statx without following links,
// unlinkat) rather than os.Root.RemoveAll, which would descend into a mount below the root.
package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrOtherFilesystem marks an entry that is a mount point or on another filesystem: it is
// left alone, and the directories above it stay.
var ErrOtherFilesystem = errors.New("on another filesystem or mount; not entered")

// ErrUnsafeName marks a name that is not a single clean path component.
var ErrUnsafeName = errors.New("not a single path component")

// CheckName returns an error unless name is one path component other than "." and "..".
func CheckName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%q: %w", name, ErrUnsafeName)
	}
	return nil
}

// RemoveAllIn removes root/elems[0]/.../elems[n-1] and everything below it. Each element must
// be a single path component, and none is followed if it is a symlink (a symlink as the last
// element is removed itself). A directory on another filesystem or mount is not entered: the
// error wraps ErrOtherFilesystem and names it, and what contains it stays. A missing path is
// not an error.
func RemoveAllIn(root string, elems ...string) error {
	return removeIn(root, elems, true)
}

// RemoveIn removes root/elems... like os.Remove (a file or an empty directory) under the same
// rules as RemoveAllIn. A missing path is not an error; a directory that is not empty gives
// an error matching syscall.ENOTEMPTY.
func RemoveIn(root string, elems ...string) error {
	return removeIn(root, elems, false)
}

func removeIn(root string, elems []string, all bool) error {
	if len(elems) == 0 {
		return fmt.Errorf("remove in %s: no name given", root)
	}
	for _, e := range elems {
		if err := CheckName(e); err != nil {
			return fmt.Errorf("remove in %s: %w", root, err)
		}
	}
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rootFD)
	rootID, err := statx(rootFD, "")
	if err != nil {
		return &fs.PathError{Op: "statx", Path: root, Err: err}
	}
	w := walker{root: rootID}
	dirFD, path := rootFD, root
	for _, e := range elems[:len(elems)-1] {
		path = filepath.Join(path, e)
		fd, err := w.openDir(dirFD, e, path)
		if err != nil || fd < 0 {
			return err
		}
		defer unix.Close(fd)
		dirFD = fd
	}
	last := elems[len(elems)-1]
	return w.remove(dirFD, last, filepath.Join(path, last), all)
}

// walker holds the identity of the root every entry must share.
type walker struct {
	root unix.Statx_t
}

// sameMount reports whether st is on the root's mount. The mount ID tells where the kernel has
// it (a bind mount of the same filesystem has the same device); the device is compared for
// directories only, since overlayfs reports a lower layer's device for files.
func (w walker) sameMount(st *unix.Statx_t) bool {
	if st.Attributes&st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return false
	}
	if st.Mask&w.root.Mask&unix.STATX_MNT_ID != 0 && st.Mnt_id != w.root.Mnt_id {
		return false
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	return !isDir || (st.Dev_major == w.root.Dev_major && st.Dev_minor == w.root.Dev_minor)
}

// openDir opens dirFD/name as a directory on the root's mount without following a symlink;
// -1 and no error when it does not exist.
func (w walker) openDir(dirFD int, name, path string) (int, error) {
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, nil
		}
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	st, err := statx(fd, "")
	if err == nil && !w.sameMount(&st) {
		err = ErrOtherFilesystem
	}
	if err != nil {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return fd, nil
}

// remove removes dirFD/name (path, for errors), recursively when all.
func (w walker) remove(dirFD int, name, path string, all bool) error {
	st, err := statx(dirFD, name)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return &fs.PathError{Op: "statx", Path: path, Err: err}
	case !w.sameMount(&st):
		return &fs.PathError{Op: "remove", Path: path, Err: ErrOtherFilesystem}
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return unlink(dirFD, name, path, 0)
	}
	if all {
		if err := w.removeChildren(dirFD, name, path); err != nil {
			return err
		}
	}
	return unlink(dirFD, name, path, unix.AT_REMOVEDIR)
}

// removeChildren empties the directory dirFD/name, going on past errors so that as much as
// may go is gone.
func (w walker) removeChildren(dirFD int, name, path string) error {
	fd, err := w.openDir(dirFD, name, path)
	if err != nil || fd < 0 {
		return err
	}
	dir := os.NewFile(uintptr(fd), path)
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return err
	}
	var errs []error
	for _, child := range names {
		errs = append(errs, w.remove(fd, child, filepath.Join(path, child), true))
	}
	return errors.Join(errs...)
}

func unlink(dirFD int, name, path string, flags int) error {
	if err := unix.Unlinkat(dirFD, name, flags); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// statx describes dirFD/name ("" for dirFD itself) without following a symlink.
func statx(dirFD int, name string) (unix.Statx_t, error) {
	var st unix.Statx_t
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_STATX_SYNC_AS_STAT
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	err := unix.Statx(dirFD, name, flags, unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_MNT_ID, &st)
	return st, err
}
