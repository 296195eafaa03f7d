// Package subpath hands a container one file or directory inside a volume (a volume mount's
// subPath) without letting what the pod wrote into the volume lead nodelet anywhere else.
//
// Containers write the volume, so any component of a subPath may be a symlink they planted,
// and may be swapped while nodelet looks. The subPath is therefore resolved component by
// component from a descriptor of the volume, never following a symlink by path: a link is
// read and its target resolved the same way, and one that leads out of the volume is refused.
// The descriptor of what it resolved to is then bind-mounted (through /proc/self/fd) on a path
// nodelet owns, and that path is what the runtime mounts into the container.
package subpath

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrOutside: the path, through a symlink, leads out of the volume.
var ErrOutside = errors.New("it leads out of the volume")

// maxSymlinks is the kernel's limit of links in one resolution (MAXSYMLINKS).
const maxSymlinks = 40

// Open resolves path inside the directory root and returns an O_PATH descriptor of what it
// names. Each component is opened from the one before without following symlinks; a link's
// target is resolved the same way, a relative one from the link's directory, an absolute one
// from root when it names a path inside root. A ".." above root, or an absolute target
// elsewhere, is ErrOutside, as a link loop is ELOOP. With mkdir, missing directories are made
// inside root the same way, with root's permission bits whatever the umask, as upstream
// makes them: a subPath under a 0750 host directory must not open a world-writable hole in it.
func Open(root, path string, mkdir bool) (*os.File, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the volume: %w", err)
	}
	real, err := os.Readlink(fdPath(fd))
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("locate the volume: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat the volume: %w", err)
	}
	w := &walker{root: components(real), dirs: []int{fd}, mkdir: mkdir, dirMode: st.Mode & 0o777}
	defer w.closeAll()
	if err := w.walk(path); err != nil {
		return nil, err
	}
	top := w.dirs[len(w.dirs)-1]
	w.dirs = w.dirs[:len(w.dirs)-1]
	return os.NewFile(uintptr(top), path), nil
}

// fdPath is the magic link to descriptor fd: opening or mounting it reaches the very file the
// descriptor holds, not whatever its path names now.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// walker holds the descriptors of the directories from root (dirs[0]) to where the walk is.
// Since each is a real directory reached from the one before, ".." is the one before: the
// walk never asks the kernel for a parent, which a rename could move out of the volume.
type walker struct {
	root  []string // root's real path, as components
	dirs  []int
	links int
	mkdir bool
	// dirMode is the permission bits of the directories the walk makes: root's.
	dirMode uint32
}

func (w *walker) closeAll() {
	for _, fd := range w.dirs {
		unix.Close(fd)
	}
	w.dirs = nil
}

func (w *walker) walk(path string) error {
	rest := strings.Split(path, "/")
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(w.dirs) == 1 {
				return ErrOutside
			}
			unix.Close(w.dirs[len(w.dirs)-1])
			w.dirs = w.dirs[:len(w.dirs)-1]
			continue
		}
		fd, err := w.openAt(name)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := w.readLink(fd)
			if err != nil {
				return err
			}
			rest = append(strings.Split(target, "/"), rest...)
		case unix.S_IFDIR:
			w.dirs = append(w.dirs, fd)
		default:
			w.dirs = append(w.dirs, fd) // closed with the others on error
			if len(rest) > 0 {
				return unix.ENOTDIR
			}
		}
	}
	return nil
}

// openAt opens name in the current directory without following it, making it a directory
// first when it is missing and the walk may.
func (w *walker) openAt(name string) (int, error) {
	dir := w.dirs[len(w.dirs)-1]
	for {
		fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.ENOENT || !w.mkdir {
			return fd, err
		}
		err = unix.Mkdirat(dir, name, w.dirMode)
		if err == unix.EEXIST {
			continue // made meanwhile by someone else: look at what it is
		}
		if err != nil {
			return -1, err
		}
		// The mode is set through a descriptor of what was made: a chmod by name would follow
		// a symlink swapped in meanwhile. O_NOFOLLOW|O_DIRECTORY fails on anything else.
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if err := unix.Fchmod(fd, w.dirMode); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	}
}

// readLink reads the link fd holds (and closes fd) and returns its target relative to where
// the walk is, the walk reset to root for an absolute target inside it.
func (w *walker) readLink(fd int) (string, error) {
	defer unix.Close(fd)
	if w.links++; w.links > maxSymlinks {
		return "", unix.ELOOP
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	target := string(buf[:n])
	if !strings.HasPrefix(target, "/") {
		return target, nil
	}
	rel, ok := inside(w.root, components(target))
	if !ok {
		return "", ErrOutside
	}
	for len(w.dirs) > 1 {
		unix.Close(w.dirs[len(w.dirs)-1])
		w.dirs = w.dirs[:len(w.dirs)-1]
	}
	return strings.Join(rel, "/"), nil
}

// inside returns what follows root in path, when path starts with root's components. The
// prefix is compared as written: a link through ".." or a symlink of the host is refused
// rather than resolved outside the volume.
func inside(root, path []string) ([]string, bool) {
	if len(path) < len(root) {
		return nil, false
	}
	for i, c := range root {
		if path[i] != c {
			return nil, false
		}
	}
	return path[len(root):], true
}

// components splits an absolute path, dropping empty and "." components.
func components(path string) []string {
	var out []string
	for _, c := range strings.Split(path, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}
