package gc

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/fsutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/volumes/mount"
)

// unclaimedGrace is how long a pod log directory no runtime object refers to must have been
// left alone before it is removed: /var/log/pods may be shared with other nodelets, which
// create a pod's directory just before its sandbox.
const unclaimedGrace = time.Minute

// evictPodLogDirs removes the /var/log/pods/<namespace>_<name>_<uid> directories of gone pods
// once the runtime holds nothing of them.
func (p *pass) evictPodLogDirs() {
	entries, err := os.ReadDir(p.g.opts.PodLogsDir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			klog.ErrorS(err, "Cannot read the pod logs directory", "path", p.g.opts.PodLogsDir)
		}
		return
	}
	held := p.onRuntime()
	now := p.g.opts.Clock.Now()
	for _, e := range entries {
		uid := uidOfLogDir(e.Name())
		if !e.IsDir() || uid == "" || held[uid] || !p.gone(uid) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < unclaimedGrace {
			continue
		}
		dir := filepath.Join(p.g.opts.PodLogsDir, e.Name())
		if err := fsutil.RemoveAllIn(p.g.opts.PodLogsDir, e.Name()); err != nil {
			klog.ErrorS(err, "Failed to remove the log directory of a gone pod", "path", dir)
			continue
		}
		klog.V(2).InfoS("Removed the log directory of a gone pod", "path", dir, "podUID", uid)
	}
}

// uidOfLogDir takes the pod UID out of "<namespace>_<name>_<uid>" (neither namespace nor
// name may hold an underscore).
func uidOfLogDir(name string) types.UID {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[2] == "" {
		return ""
	}
	return types.UID(parts[2])
}

// evictPodDirs removes <root-dir>/pods/<uid> of gone pods the runtime holds nothing of, unless
// something is still mounted inside (a volume not torn down): that one is logged and kept.
func (p *pass) evictPodDirs() {
	if p.g.opts.RootDir == "" {
		return
	}
	entries, err := os.ReadDir(p.g.podsDir())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			klog.ErrorS(err, "Cannot read the pods directory", "path", p.g.podsDir())
		}
		return
	}
	held := p.onRuntime()
	var mounts []string
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !e.IsDir() || held[uid] || !p.gone(uid) {
			continue
		}
		if mounts == nil {
			if mounts, err = mount.ReadPoints(p.g.opts.Mountinfo); err != nil {
				klog.ErrorS(err, "Cannot read the mount table; keeping orphaned pod directories")
				return
			}
		}
		dir := filepath.Join(p.g.podsDir(), e.Name())
		if under := mount.Under(mounts, dir); len(under) > 0 {
			klog.InfoS("Orphaned pod directory still has mounts; keeping it", "podUID", uid, "path", dir, "mounts", under)
			continue
		}
		if err := fsutil.RemoveAllIn(p.g.podsDir(), e.Name()); err != nil {
			klog.ErrorS(err, "Failed to remove an orphaned pod directory", "podUID", uid, "path", dir)
			continue
		}
		klog.V(2).InfoS("Removed orphaned pod directory", "podUID", uid, "path", dir)
	}
}

// removeDanglingLogLinks removes /var/log/containers symlinks whose log file is gone, unless
// their container still runs: log rotation leaves the link dangling for a moment.
func (p *pass) removeDanglingLogLinks(ctx context.Context) {
	dir := p.g.opts.ContainerLogsDir
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		link := filepath.Join(dir, e.Name())
		if _, err := os.Stat(link); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if !p.containerDone(ctx, containerIDOfLink(e.Name())) {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			klog.ErrorS(err, "Failed to remove a dangling container log symlink", "path", link)
			continue
		}
		klog.V(4).InfoS("Removed dangling container log symlink", "path", link)
	}
}

// containerDone reports whether the container is gone or exited.
func (p *pass) containerDone(ctx context.Context, id string) bool {
	if id == "" {
		return true
	}
	cl, err := p.g.opts.Runtime.ContainerLog(ctx, id)
	switch {
	case errors.Is(err, container.ErrContainerNotFound):
		return true
	case err != nil:
		klog.V(2).InfoS("Cannot read a container's state; keeping its dangling log symlink", "containerID", id, "err", err)
		return false
	}
	return cl.State == container.StateExited
}

// containerIDOfLink takes the container ID out of "<pod>_<namespace>_<container>-<id>.log".
func containerIDOfLink(name string) string {
	name = strings.TrimSuffix(name, ".log")
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return ""
	}
	return name[i+1:]
}
