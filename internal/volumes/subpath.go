package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/fsutil"
	"github.com/nodelet/nodelet/internal/volumes/subpath"
)

// subPathsDir holds a pod's subPath mounts: <volume>/<container>/<mount index>, upstream's
// layout.
const subPathsDir = "volume-subpaths"

// SubPath resolves subPath (relative, without '..': the runtime checked it) inside pod's
// volume name without following a symlink out of it, making missing directories unless
// containers only read the volume, and bind-mounts what it found on a path of the pod's
// directory for mount index of container; it returns that path, for the runtime to mount,
// and whether containers may only read it. The volume must be set up.
//
// Errors name the volume mount, the container and the subPath, never a host path: the pod's
// author reads them in its status.
func (m *Manager) SubPath(pod *v1.Pod, container string, index int, name, subPath string) (string, bool, error) {
	mnt, err := m.filesystem(pod, name)
	if err != nil {
		return "", false, err
	}
	for _, elem := range []string{container, name, string(pod.UID)} {
		if fsutil.CheckName(elem) != nil {
			return "", false, fmt.Errorf("volume mount %q of container %q: names that are not one path element", name, container)
		}
	}
	src, err := subpath.Open(mnt.Path, subPath, !mnt.ReadOnly)
	if err != nil {
		klog.ErrorS(err, "Cannot resolve a subPath inside its volume", "pod", klog.KObj(pod), "container", container, "volume", name, "subPath", subPath)
		return "", false, subPathError(name, container, subPath, mnt.ReadOnly, err)
	}
	defer src.Close()
	target := filepath.Join(m.podDir(pod.UID), subPathsDir, name, container, strconv.Itoa(index))
	if err := subpath.Bind(m.mounter, src, target); err != nil {
		klog.ErrorS(err, "Cannot mount a subPath", "pod", klog.KObj(pod), "container", container, "volume", name, "subPath", subPath, "target", target)
		return "", false, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q: mounting subPath %q failed; the node's log says why", name, container, subPath)
	}
	return target, mnt.ReadOnly, nil
}

// subPathError says why subPath cannot be used, in upstream's words first, then in terms of
// what the pod's author wrote.
func subPathError(name, container, subPath string, readOnly bool, err error) error {
	why := "it cannot be resolved inside the volume"
	var errno syscall.Errno
	switch {
	case errors.Is(err, subpath.ErrOutside):
		why = err.Error() + "; a subPath must stay inside its volume, symlinks included"
	case readOnly && errors.Is(err, fs.ErrNotExist):
		why = "it does not exist in the volume, and containers may only read the volume"
	case errors.As(err, &errno):
		why = errno.Error()
	}
	return fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q: subPath %q: %s", name, container, subPath, why)
}

// cleanSubPaths unmounts and removes the subPath mounts of pod uid's volume name. A volume is
// torn down only after this succeeded: the mounts keep its content reachable.
func (m *Manager) cleanSubPaths(uid types.UID, name string) error {
	return subpath.Clean(m.mounter, filepath.Join(m.podDir(uid), subPathsDir, name))
}

// cleanAllSubPaths cleans the subPath mounts of every volume of pod uid.
func (m *Manager) cleanAllSubPaths(uid types.UID) error {
	dir := filepath.Join(m.podDir(uid), subPathsDir)
	vols, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, v := range vols {
		if err := m.cleanSubPaths(uid, v.Name()); err != nil {
			return fmt.Errorf("subPath mounts of volume %q: %w", v.Name(), err)
		}
	}
	return os.Remove(dir)
}
