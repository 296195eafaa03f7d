// Package plugins holds the volume types nodelet sets up: emptyDir, hostPath, configMap,
// secret, downwardAPI, projected (with service account tokens) and the hostPath and local
// PersistentVolumes behind persistentVolumeClaims.
package plugins

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/fsutil"
	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/podspec/objects"
	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/mount"
	"github.com/nodelet/nodelet/internal/volumes/tokens"
)

// TokenGetter requests bound service account tokens for projected volumes.
type TokenGetter = tokens.Getter

// Deps are what the plugins read and mount with.
type Deps struct {
	// Objects reads ConfigMaps and Secrets; nil (standalone) makes every such volume fail
	// with an error naming the object.
	Objects objects.Getter
	// Tokens requests service account tokens; nil makes serviceAccountToken sources fail.
	Tokens TokenGetter
	// Mounter mounts tmpfs for memory-backed emptyDirs, secrets and projected volumes
	// (default mount.Host{}).
	Mounter mount.Mounter
	// NodeName and NodeIP answer spec.nodeName and status.hostIP in downwardAPI volumes.
	NodeName, NodeIP string
	// Capacity is the machine's, read once at start: what an unset limit reads as in
	// downwardAPI volumes.
	Capacity downward.Capacity
	// AllocatableMemory is the node's allocatable memory in bytes, which bounds a
	// memory-backed emptyDir's tmpfs as upstream; nil or 0 leaves it to the pod's limit and
	// sizeLimit (else the kernel's default, half the RAM).
	AllocatableMemory func() int64
	// PodMemoryLimit is the memory limit of the pod's cgroup (cm.PodMemoryLimit), which
	// bounds its memory-backed emptyDirs too; nil counts no pod as limited.
	PodMemoryLimit func(*v1.Pod) (bytes int64, ok bool)
	// ImageVolumes is the ImageVolume feature gate: on, image volumes have a plugin (Image);
	// off, none, so a pod using one waits for it, as upstream's.
	ImageVolumes bool
}

// All returns every plugin, in the order the volume manager tries them.
func All(d Deps) []volumes.Plugin {
	if d.Mounter == nil {
		d.Mounter = mount.Host{}
	}
	tokens := tokens.NewCache(d.Tokens)
	all := []volumes.Plugin{
		&EmptyDir{mounter: d.Mounter, allocatableMemory: d.AllocatableMemory, podMemoryLimit: d.PodMemoryLimit},
		HostPath{},
		Local{},
		newObjectPlugin(configMapPlugin, d, tokens),
		newObjectPlugin(secretPlugin, d, tokens),
		newObjectPlugin(downwardAPIPlugin, d, tokens),
		newObjectPlugin(projectedPlugin, d, tokens),
	}
	if d.ImageVolumes {
		all = append(all, Image{})
	}
	return all
}

// removeVolumeDir unmounts what is at or below dir (a tmpfs, or what a container mounted
// there with bidirectional propagation) and then removes it.
func removeVolumeDir(m mount.Mounter, dir string) error {
	if err := mount.UnmountAll(m, dir); err != nil {
		return err
	}
	if err := fsutil.RemoveAllIn(filepath.Dir(dir), filepath.Base(dir)); err != nil {
		return fmt.Errorf("remove volume directory: %w", err)
	}
	return nil
}

// ensureTmpfs creates dir and mounts a tmpfs of at most size bytes on it, unless one is
// there already.
func ensureTmpfs(m mount.Mounter, pod *v1.Pod, dir string, size int64) error {
	return ensureMount(m, pod, dir, "tmpfs", func() error { return m.MountTmpfs(dir, size) })
}

// ensureMount creates dir and mounts a filesystem of type fstype on it with mountFS, unless
// something is mounted there already: a restart must not hide what a volume holds.
func ensureMount(m mount.Mounter, pod *v1.Pod, dir, fstype string, mountFS func() error) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	mounted, err := m.IsMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	if err := mountFS(); err != nil {
		return fmt.Errorf("mount %s: %w", fstype, err)
	}
	klog.V(2).InfoS("Mounted a filesystem for volume", "pod", klog.KObj(pod), "path", dir, "type", fstype)
	return nil
}
