package stats

import (
	"context"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Layer is a container's writable layer and the filesystem holding it.
type Layer struct {
	Device                    string // the filesystem's device number, "major:minor"
	UsedBytes                 uint64
	CapacityBytes, InodesFree uint64 // of the filesystem
	Inodes                    uint64 // of the filesystem
}

// Layers reads every container's writable layer from the runtime, by container ID; a
// container whose runtime gives no layer usage is left out.
func (p *Provider) Layers(ctx context.Context) (map[string]Layer, error) {
	crStats, err := p.d.Runtime.ListContainerStats(ctx)
	if err != nil {
		return nil, err
	}
	type fsOf struct {
		info fsInfo
		dev  string
	}
	filesystems := map[string]*fsOf{} // by mountpoint, each read once
	out := make(map[string]Layer, len(crStats))
	for _, cs := range crStats {
		l := cs.GetWritableLayer()
		mountpoint := l.GetFsId().GetMountpoint()
		if l.GetUsedBytes() == nil || mountpoint == "" {
			continue
		}
		fs := filesystems[mountpoint]
		if fs == nil {
			fs = &fsOf{}
			fs.info, _ = statFS(mountpoint)
			fs.dev = deviceOf(mountpoint)
			filesystems[mountpoint] = fs
		}
		if fs.dev == "" || fs.info.capacity == 0 {
			continue // nothing to say which filesystem it is on
		}
		out[cs.GetAttributes().GetId()] = Layer{Device: fs.dev, UsedBytes: l.GetUsedBytes().GetValue(),
			CapacityBytes: fs.info.capacity, InodesFree: fs.info.inodesFree, Inodes: fs.info.inodes}
	}
	return out, nil
}

// deviceOf is the "major:minor" of the filesystem holding path ("" when it cannot be read).
func deviceOf(path string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}
