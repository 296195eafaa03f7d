// Package mount is the volume code's view of the host's mount table: whether a directory is
// a mount point, tmpfs mounts for memory-backed volumes, and unmounting what is below a
// directory before it is removed.
package mount

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// Mounter is what the volume code does with mounts; tests replace the host's.
type Mounter interface {
	// IsMountPoint reports whether dir is the root of a mount.
	IsMountPoint(dir string) (bool, error)
	// MountTmpfs mounts a tmpfs of at most sizeBytes (0: the kernel default) on dir.
	MountTmpfs(dir string, sizeBytes int64) error
	// MountHugetlbfs mounts a hugetlbfs of pageSize-byte pages on dir.
	MountHugetlbfs(dir string, pageSize int64) error
	// MountsUnder returns the mount points at or below dir, the deepest first.
	MountsUnder(dir string) ([]string, error)
	// Unmount unmounts the mount at dir.
	Unmount(dir string) error
	// BindFd bind-mounts the file or directory src holds (an O_PATH descriptor) on target,
	// an existing path of the same kind, and checks that target then is src.
	BindFd(src *os.File, target string) error
}

// Mountinfo is the mount table of nodelet's mount namespace.
const Mountinfo = "/proc/self/mountinfo"

// Host mounts on this machine.
type Host struct{}

// IsMountPoint compares dir's device with its parent's, which differs at a mount root. A bind
// mount of a directory of the same filesystem (what many CSI drivers publish) keeps the
// device, so when they match the mount table decides.
func (Host) IsMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	if st.Dev != parent.Dev {
		return true, nil
	}
	points, err := ReadPoints(Mountinfo)
	if err != nil {
		return false, err
	}
	return slices.Contains(points, filepath.Clean(dir)), nil
}

// MountTmpfs mounts a tmpfs without devices or setuid binaries, as upstream does.
func (Host) MountTmpfs(dir string, sizeBytes int64) error {
	opts := ""
	if sizeBytes > 0 {
		opts = "size=" + strconv.FormatInt(sizeBytes, 10)
	}
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts)
}

// MountHugetlbfs mounts a hugetlbfs whose files are backed by huge pages of pageSize bytes
// (the pages the pod's hugepages-<size> request sets aside), as upstream mounts one.
func (Host) MountHugetlbfs(dir string, pageSize int64) error {
	return unix.Mount("nodev", dir, "hugetlbfs", 0, "pagesize="+strconv.FormatInt(pageSize, 10))
}

// MountsUnder reads the mount table.
func (Host) MountsUnder(dir string) ([]string, error) {
	points, err := ReadPoints(Mountinfo)
	if err != nil {
		return nil, err
	}
	return Under(points, dir), nil
}

// Unmount detaches the mount lazily when it is busy, so a volume is never left behind
// because something still holds a file open in it.
func (Host) Unmount(dir string) error {
	if err := unix.Unmount(dir, 0); err != nil {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
	}
	return nil
}

// BindFd mounts src through its /proc/self/fd link, so the mount is the file src holds
// whatever its path names meanwhile, then compares the mount with src: a mismatch is
// unmounted again and an error.
func (Host) BindFd(src *os.File, target string) error {
	var want, got unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &want); err != nil {
		return err
	}
	source := "/proc/self/fd/" + strconv.Itoa(int(src.Fd()))
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount on %s: %w", target, err)
	}
	fd, err := unix.Open(target, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Fstat(fd, &got)
		unix.Close(fd)
	}
	if err == nil && (got.Dev != want.Dev || got.Ino != want.Ino) {
		err = fmt.Errorf("the mount on %s is not what was resolved", target)
	}
	if err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return err
	}
	return nil
}

// UnmountAll unmounts everything at or below dir, the deepest first, so dir can be removed.
func UnmountAll(m Mounter, dir string) error {
	points, err := m.MountsUnder(dir)
	if err != nil {
		return err
	}
	for _, p := range points {
		if err := m.Unmount(p); err != nil {
			return err
		}
		klog.V(2).InfoS("Unmounted volume", "path", p)
	}
	return nil
}

// ReadPoints returns every mount point in a mountinfo file.
func ReadPoints(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	points := []string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 5 {
			points = append(points, unescapeOctal(fields[4]))
		}
	}
	return points, sc.Err()
}

// Under returns the mount points at or below dir, the deepest first.
func Under(points []string, dir string) []string {
	dir = filepath.Clean(dir)
	var out []string
	for _, p := range points {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unescapeOctal undoes mountinfo's \ooo escapes (\040 is a space).
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
