package stats

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// fsInfo is one filesystem's size, from statfs.
type fsInfo struct {
	capacity, available, used, inodes, inodesFree uint64
}

func statFS(path string) (fsInfo, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return fsInfo{}, err
	}
	block := uint64(st.Frsize)
	if block == 0 {
		block = uint64(st.Bsize)
	}
	return fsInfo{
		capacity:   st.Blocks * block,
		available:  st.Bavail * block,
		used:       (st.Blocks - st.Bfree) * block,
		inodes:     st.Files,
		inodesFree: st.Ffree,
	}, nil
}

// fsStats reports the whole filesystem.
func (f fsInfo) fsStats(at time.Time) *statsapi.FsStats {
	return &statsapi.FsStats{
		Time:           metav1.NewTime(at),
		CapacityBytes:  ptr.To(f.capacity),
		AvailableBytes: ptr.To(f.available),
		UsedBytes:      ptr.To(f.used),
		Inodes:         ptr.To(f.inodes),
		InodesFree:     ptr.To(f.inodesFree),
		InodesUsed:     ptr.To(subFloor(f.inodes, f.inodesFree)),
	}
}

// partStats reports a part of the filesystem (a volume, a log directory, a writable layer):
// its own use against the filesystem's capacity. A zero fsInfo (statfs failed) leaves the
// capacity fields out.
func (f fsInfo) partStats(at time.Time, used, inodesUsed uint64) *statsapi.FsStats {
	s := &statsapi.FsStats{Time: metav1.NewTime(at), UsedBytes: ptr.To(used), InodesUsed: ptr.To(inodesUsed)}
	if f.capacity > 0 {
		s.CapacityBytes, s.AvailableBytes = ptr.To(f.capacity), ptr.To(f.available)
		s.Inodes, s.InodesFree = ptr.To(f.inodes), ptr.To(f.inodesFree)
	}
	return s
}

// usage is the disk space and inodes below a directory.
type usage struct {
	bytes, inodes uint64
}

// diskUsage measures dir as `du -x` would: allocated blocks, each hard-linked file once, not
// crossing into other filesystems. A missing dir is empty. The walk stops when ctx ends.
func diskUsage(ctx context.Context, dir string) (usage, error) {
	root, err := os.Lstat(dir)
	if os.IsNotExist(err) {
		return usage{}, nil
	}
	if err != nil {
		return usage{}, err
	}
	dev := root.Sys().(*syscall.Stat_t).Dev
	seen := map[uint64]bool{}
	var u usage
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while walking
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Dev != dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		u.bytes += uint64(st.Blocks) * 512
		u.inodes++
		return nil
	})
	return u, err
}
