package stats

import (
	"context"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"
)

// Layer is a container's writable layer and the filesystem holding it.
type Layer struct {
	Device        string // the filesystem's device number, "major:minor"
	UsedBytes     uint64
	InodesUsed    *uint64 // by the layer; nil when the runtime does not say
	CapacityBytes uint64  // of the filesystem
}

// Layers reads every container's writable layer from the runtime, by container ID; a
// container whose runtime gives no layer usage is left out.
func (p *Provider) Layers(ctx context.Context) (map[string]Layer, error) {
	crStats, err := p.d.Runtime.ListContainerStats(ctx)
	if err != nil {
		return nil, err
	}
	fsys := &filesystems{mounts: map[string]fsInfo{}} // statfs of each mountpoint once
	devices := map[string]string{}                    // and its device
	out := make(map[string]Layer, len(crStats))
	for _, cs := range crStats {
		l := cs.GetWritableLayer()
		mountpoint := l.GetFsId().GetMountpoint()
		if l.GetUsedBytes() == nil || mountpoint == "" {
			continue
		}
		info := fsys.mount(mountpoint)
		dev, seen := devices[mountpoint]
		if !seen {
			dev = deviceOf(mountpoint)
			devices[mountpoint] = dev
		}
		if dev == "" || info.capacity == 0 {
			continue // nothing to say which filesystem it is on
		}
		layer := Layer{Device: dev, UsedBytes: l.GetUsedBytes().GetValue(), CapacityBytes: info.capacity}
		if l.GetInodesUsed() != nil {
			layer.InodesUsed = ptr.To(l.GetInodesUsed().GetValue())
		}
		out[cs.GetAttributes().GetId()] = layer
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
