package stats

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// filesystems holds the statfs figures one full summary needs, each read once.
type filesystems struct {
	root      fsInfo // the filesystem holding RootDir (the node's)
	logs      fsInfo // the filesystem holding PodLogsDir
	image     *statsapi.FsStats
	container *statsapi.FsStats
	mounts    map[string]fsInfo // by mountpoint, for writable layers
}

func (p *Provider) filesystems(ctx context.Context, now time.Time) *filesystems {
	f := &filesystems{mounts: map[string]fsInfo{}}
	var err error
	if f.root, err = statFS(p.d.RootDir); err != nil {
		klog.V(2).InfoS("Cannot statfs the root directory", "path", p.d.RootDir, "err", err)
	}
	if f.logs, err = statFS(p.d.PodLogsDir); err != nil {
		klog.V(2).InfoS("Cannot statfs the pod logs directory", "path", p.d.PodLogsDir, "err", err)
	}
	resp, err := p.d.Runtime.ImageFsInfo(ctx)
	if err != nil {
		klog.V(2).InfoS("Cannot read the runtime's image filesystem", "err", err)
		return f
	}
	f.image = f.usageStats(resp.GetImageFilesystems(), now)
	f.container = f.usageStats(resp.GetContainerFilesystems(), now)
	if f.container == nil && f.image != nil {
		// No separate container filesystem: writable layers share the image one.
		cp := *f.image
		f.container = &cp
	}
	return f
}

// usageStats turns the first CRI filesystem usage into FsStats: used figures from the runtime,
// capacity from statfs of its mountpoint.
func (f *filesystems) usageStats(usages []*cri.FilesystemUsage, now time.Time) *statsapi.FsStats {
	if len(usages) == 0 {
		return nil
	}
	u := usages[0]
	at := now
	if u.GetTimestamp() > 0 {
		at = time.Unix(0, u.GetTimestamp())
	}
	s := f.mount(u.GetFsId().GetMountpoint()).partStats(at, u.GetUsedBytes().GetValue(), u.GetInodesUsed().GetValue())
	if u.GetUsedBytes() == nil {
		s.UsedBytes = nil
	}
	if u.GetInodesUsed() == nil {
		s.InodesUsed = nil
	}
	return s
}

// mount returns statfs figures for a mountpoint, reading each once per summary; an unknown
// or unreadable one gives zero figures (capacity left out).
func (f *filesystems) mount(path string) fsInfo {
	if path == "" {
		return fsInfo{}
	}
	if info, ok := f.mounts[path]; ok {
		return info
	}
	info, err := statFS(path)
	if err != nil {
		klog.V(4).InfoS("Cannot statfs a runtime filesystem", "path", path, "err", err)
	}
	f.mounts[path] = info
	return info
}

func (f *filesystems) runtimeStats() *statsapi.RuntimeStats {
	if f.image == nil && f.container == nil {
		return nil
	}
	return &statsapi.RuntimeStats{ImageFs: f.image, ContainerFs: f.container}
}

// writableLayer reports a container's writable layer against its filesystem.
func (f *filesystems) writableLayer(l *cri.FilesystemUsage, now time.Time) *statsapi.FsStats {
	if l == nil {
		return nil
	}
	return f.usageStats([]*cri.FilesystemUsage{l}, now)
}

// sumFs adds used bytes and inodes of parts into an FsStats measured against fs.
func sumFs(fs fsInfo, at time.Time, parts ...*statsapi.FsStats) *statsapi.FsStats {
	var used, inodes uint64
	for _, s := range parts {
		if s == nil {
			continue
		}
		if s.UsedBytes != nil {
			used += *s.UsedBytes
		}
		if s.InodesUsed != nil {
			inodes += *s.InodesUsed
		}
	}
	return fs.partStats(at, used, inodes)
}
