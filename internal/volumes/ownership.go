package volumes

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

const (
	// The bits fsGroup adds, as upstream: the group (and the owner) may read and write, or
	// only read on a read-only volume; directories are searchable and setgid so new files
	// inherit the group.
	ownershipRW   fs.FileMode = 0o660
	ownershipRO   fs.FileMode = 0o440
	ownershipExec fs.FileMode = 0o110
)

// SetOwnership gives dir and everything below it to group gid, as the kubelet applies a pod's
// fsGroup to a volume. With fsGroupChangePolicy OnRootMismatch nothing is walked when dir
// already carries the group and bits. Symbolic links are left alone.
func SetOwnership(dir string, gid int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	mask := ownershipRW
	if readOnly {
		mask = ownershipRO
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && carries(dir, gid, mask) {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil || info.Mode()&fs.ModeSymlink != 0 {
			return err
		}
		if err := os.Lchown(path, -1, int(gid)); err != nil {
			return err
		}
		bits := mask
		if info.IsDir() {
			bits |= fs.ModeSetgid | ownershipExec
		}
		if info.Mode()&bits == bits {
			return nil
		}
		return os.Chmod(path, info.Mode()|bits)
	})
}

// carries reports whether dir is owned by group gid and has the bits fsGroup adds.
func carries(dir string, gid int64, mask fs.FileMode) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != gid {
		return false
	}
	want := mask | fs.ModeSetgid | ownershipExec
	return info.Mode()&want == want
}
