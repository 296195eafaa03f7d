package runtime

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// volumeMounter mounts memory-backed emptyDirs; tests replace it.
type volumeMounter interface {
	// IsMountPoint reports whether dir is the root of a mount.
	IsMountPoint(dir string) (bool, error)
	// MountTmpfs mounts a tmpfs of at most sizeBytes (0: the kernel default) on dir.
	MountTmpfs(dir string, sizeBytes int64) error
}

type hostMounter struct{}

// IsMountPoint compares dir's device with its parent's, which differs at a mount root.
func (hostMounter) IsMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

func (hostMounter) MountTmpfs(dir string, sizeBytes int64) error {
	opts := ""
	if sizeBytes > 0 {
		opts = "size=" + strconv.FormatInt(sizeBytes, 10)
	}
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts)
}

// setUpMemoryEmptyDir mounts a tmpfs on a medium: Memory emptyDir once; later syncs find it
// mounted.
func (m *manager) setUpMemoryEmptyDir(pod *v1.Pod, vol *v1.Volume) error {
	dir := m.volumeDir(pod, emptyDirPlugin, vol.Name)
	var size int64
	if vol.EmptyDir.SizeLimit != nil {
		size = vol.EmptyDir.SizeLimit.Value()
	}
	if err := m.ensureTmpfs(pod, vol.Name, dir, size); err != nil {
		return err
	}
	return prepareEmptyDir(dir, fsGroup(pod))
}

// ensureTmpfs creates dir and mounts a tmpfs on it unless one is there already.
func (m *manager) ensureTmpfs(pod *v1.Pod, volume, dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	mounted, err := m.mounter.IsMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	if err := m.mounter.MountTmpfs(dir, size); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	klog.V(2).InfoS("Mounted tmpfs for volume", "pod", klog.KObj(pod), "volume", volume, "sizeBytes", size)
	return nil
}

// UnmountPodVolumes unmounts everything mounted under podDir (memory-backed emptyDirs), the
// deepest first, so the directory can be removed.
func UnmountPodVolumes(podDir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	points, err := mountPointsUnder(f, podDir)
	if err != nil {
		return err
	}
	for _, p := range points {
		if err := unix.Unmount(p, 0); err != nil {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s: %w", p, err)
			}
		}
		klog.V(2).InfoS("Unmounted pod volume", "path", p)
	}
	return nil
}

// mountPointsUnder reads mountinfo and returns the mount points below dir, deepest first.
func mountPointsUnder(r io.Reader, dir string) ([]string, error) {
	prefix := filepath.Clean(dir) + "/"
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountPath(fields[4])
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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
