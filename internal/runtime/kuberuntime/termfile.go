package kuberuntime

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// readTerminationFile reads the last maxTermMessageBytes of a termination message file. The
// file's containers may have replaced it, or a directory above it in a volume, with a symlink,
// a FIFO or a device, and nodelet reads as root: so hostPath must lie in the pod's own
// directory, is walked from there one component at a time without following any symlink, and
// must be a regular file. A missing file is no message and no error.
func (m *Manager) readTerminationFile(podUID, hostPath string) (string, error) {
	podsDir := filepath.Join(m.rootDir, "pods")
	parts, err := pathInPodDir(podsDir, podUID, hostPath)
	if err != nil {
		return "", err
	}
	f, err := openRegularBeneath(podsDir, parts)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	defer f.Close()
	return readTail(f, maxTermMessageBytes)
}

// pathInPodDir returns hostPath's components below podsDir, the first being podUID: an error
// when hostPath is anywhere else.
func pathInPodDir(podsDir, podUID, hostPath string) ([]string, error) {
	if podUID == "" {
		return nil, fmt.Errorf("%q is not in the pod's directory", hostPath)
	}
	rel, err := filepath.Rel(podsDir, hostPath)
	if err != nil {
		return nil, fmt.Errorf("%q is not in the pod's directory: %w", hostPath, err)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) < 2 || parts[0] != podUID {
		return nil, fmt.Errorf("%q is not in the directory of pod %s", hostPath, podUID)
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("%q is not in the directory of pod %s", hostPath, podUID)
		}
	}
	return parts, nil
}

// openRegularBeneath opens dir/parts... for reading without following a symlink at any
// component and without opening anything but a regular file: the last component is first
// opened as a path only (a FIFO would block, a device could act on open), checked, then
// reopened through /proc/self/fd so that the checked inode is the one read.
func openRegularBeneath(dir string, parts []string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	walked := dir
	for i, name := range parts {
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(fd, name, flags, 0)
		unix.Close(fd)
		walked = filepath.Join(walked, name)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: walked, Err: err}
		}
		fd = next
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: walked, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file (mode %#o)", walked, st.Mode&unix.S_IFMT)
	}
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "reopen", Path: walked, Err: err}
	}
	return f, nil
}

// readTail returns the last limit bytes of f.
func readTail(f *os.File, limit int64) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	offset := max(0, fi.Size()-limit)
	data, err := io.ReadAll(io.NewSectionReader(f, offset, limit))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return string(data), nil
}
