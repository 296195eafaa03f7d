// Package mounttest is an in-memory mount table for the volume code's tests: tmpfs mounts are
// recorded with their size instead of mounted, and a test (or a fake driver) can add the bind
// mounts a real one would make.
package mounttest

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/nodelet/nodelet/internal/volumes/mount"
)

// Fake implements mount.Mounter over a map of mount points.
type Fake struct {
	mu        sync.Mutex
	mounted   map[string]int64 // mount point → tmpfs size (0 for other mounts)
	pageSizes map[string]int64 // hugetlbfs mount point → page size
}

var _ mount.Mounter = (*Fake)(nil)

// New returns an empty mount table.
func New() *Fake { return &Fake{mounted: map[string]int64{}, pageSizes: map[string]int64{}} }

func (f *Fake) IsMountPoint(dir string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.mounted[filepath.Clean(dir)]
	return ok, nil
}

func (f *Fake) MountTmpfs(dir string, size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounted[filepath.Clean(dir)] = size
	return nil
}

// MountHugetlbfs records a hugetlbfs mount and its page size (PageSizes).
func (f *Fake) MountHugetlbfs(dir string, pageSize int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mounted[filepath.Clean(dir)] = 0
	f.pageSizes[filepath.Clean(dir)] = pageSize
	return nil
}

// PageSizes copies the hugetlbfs mounts: mount point → page size.
func (f *Fake) PageSizes() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.pageSizes)
}

// BindFd records a mount at target; nothing is mounted, so target stays what it was.
func (f *Fake) BindFd(_ *os.File, target string) error {
	if _, err := os.Lstat(target); err != nil {
		return err
	}
	f.Mount(target)
	return nil
}

// Mount records a mount at dir that is not a tmpfs (a CSI driver's bind mount).
func (f *Fake) Mount(dir string) { _ = f.MountTmpfs(dir, 0) }

func (f *Fake) MountsUnder(dir string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	points := make([]string, 0, len(f.mounted))
	for p := range f.mounted {
		points = append(points, p)
	}
	return mount.Under(points, dir), nil
}

func (f *Fake) Unmount(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.mounted[filepath.Clean(dir)]; !ok {
		return errors.New("not mounted")
	}
	delete(f.mounted, filepath.Clean(dir))
	delete(f.pageSizes, filepath.Clean(dir))
	return nil
}

// Snapshot copies the table.
func (f *Fake) Snapshot() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.mounted)
}
