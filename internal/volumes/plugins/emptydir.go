package plugins

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/mount"
)

const emptyDirPlugin = "kubernetes.io~empty-dir"

// EmptyDir sets up emptyDir volumes in the pod's directory, on a tmpfs for medium Memory and
// on a hugetlbfs for the huge pages media.
type EmptyDir struct {
	mounter           mount.Mounter
	allocatableMemory func() int64                         // nil: unknown
	podMemoryLimit    func(*v1.Pod) (bytes int64, ok bool) // nil: no pod is limited
}

func (*EmptyDir) Name() string { return emptyDirPlugin }

func (*EmptyDir) CanSetUp(s *volumes.Spec) bool { return s.Volume.EmptyDir != nil }

func (e *EmptyDir) SetUp(_ context.Context, pod *v1.Pod, s *volumes.Spec, dir string) (volumes.Mount, error) {
	if err := e.mountMedium(pod, s.Volume.EmptyDir, dir); err != nil {
		return volumes.Mount{}, fmt.Errorf("emptyDir %q: %w", s.Volume.Name, err)
	}
	if err := prepareEmptyDir(dir, fsGroup(pod)); err != nil {
		return volumes.Mount{}, fmt.Errorf("emptyDir %q: %w", s.Volume.Name, err)
	}
	return volumes.Mount{Path: dir, SELinuxRelabel: true}, nil
}

// mountMedium mounts what the medium asks for on dir: a tmpfs of the size limit for Memory, a
// hugetlbfs of the pod's huge page size for HugePages[-<size>], nothing for the node's disk.
func (e *EmptyDir) mountMedium(pod *v1.Pod, src *v1.EmptyDirVolumeSource, dir string) error {
	switch {
	case src.Medium == v1.StorageMediumMemory:
		return ensureTmpfs(e.mounter, pod, dir, e.tmpfsSize(pod, src))
	case isHugePagesMedium(src.Medium):
		pageSize, err := hugePageSize(pod, src.Medium)
		if err != nil {
			return err
		}
		return ensureHugetlbfs(e.mounter, pod, dir, pageSize)
	}
	return nil
}

// tmpfsSize is the size of a memory-backed emptyDir's tmpfs, as upstream sizes it: the node's
// allocatable memory, or the pod's memory limit when that is smaller, or sizeLimit when that
// is smaller still. 0 (nothing known) leaves the kernel's default.
func (e *EmptyDir) tmpfsSize(pod *v1.Pod, src *v1.EmptyDirVolumeSource) int64 {
	var size int64
	if e.allocatableMemory != nil {
		size = e.allocatableMemory()
	}
	within := func(v int64) bool { return v > 0 && (size <= 0 || v <= size) }
	if e.podMemoryLimit != nil {
		if limit, ok := e.podMemoryLimit(pod); ok && within(limit) {
			size = limit
		}
	}
	if src.SizeLimit != nil && within(src.SizeLimit.Value()) {
		size = src.SizeLimit.Value()
	}
	return size
}

func (e *EmptyDir) TearDown(_ context.Context, _ types.UID, dir string) error {
	return removeVolumeDir(e.mounter, dir)
}

// fsGroup is the pod's securityContext.fsGroup, nil when unset.
func fsGroup(pod *v1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// prepareEmptyDir makes an emptyDir's directory world-writable, as containers of different
// users share it, and with fsGroup gives it to that group as upstream does: group-owned, the
// setgid bit so new files inherit the group, and its content handed over too when the root
// does not carry the group yet (fsGroupChangePolicy OnRootMismatch; an emptyDir starts empty,
// so Always changes nothing more).
func prepareEmptyDir(dir string, group *int64) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	mode := os.ModePerm
	if group != nil {
		mode |= os.ModeSetgid
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st.Mode()&(os.ModePerm|os.ModeSetgid) != mode {
		if err := os.Chmod(dir, mode); err != nil {
			return err
		}
	}
	if group == nil {
		return nil
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int64(sys.Gid) == *group {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(*group)); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || path == dir {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		extra := os.FileMode(0o060) // group read/write
		if d.IsDir() {
			extra |= 0o010 | os.ModeSetgid
		}
		return os.Chmod(path, info.Mode()|extra)
	})
}
