package containeropts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// LogLinks keeps the directory log collectors read (containerLogsDir, /var/log/containers):
// one symlink per container instance, pointing at its CRI log file under PodLogsDir.
type LogLinks struct {
	Dir        string // where the symlinks go; empty keeps none
	PodLogsDir string // only symlinks into it are swept
}

// LinkName names the symlink of one container instance. Names are cut to the file
// name limit, keeping the ".log" suffix.
func LinkName(dir, podName, namespace, container, id string) string {
	name := podName + "_" + namespace + "_" + container + "-" + id
	const maxName = 255 - len(".log")
	if len(name) > maxName {
		name = name[:maxName]
	}
	return filepath.Join(dir, name+".log")
}

// Link points the container's symlink at its log file. Failure only logs: the
// log is still reachable through the API.
func (l LogLinks) Link(pod *v1.Pod, container, id, logFile string) {
	if l.Dir == "" {
		return
	}
	link := LinkName(l.Dir, pod.Name, pod.Namespace, container, id)
	err := os.MkdirAll(l.Dir, 0o755)
	if err == nil {
		err = os.Symlink(logFile, link)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		klog.InfoS("Cannot create the container log symlink", "pod", klog.KObj(pod), "container", container, "link", link, "err", err)
	}
}

// Unlink removes one container's symlink (the container was removed).
func (l LogLinks) Unlink(podName, namespace, container, id string) {
	if l.Dir == "" {
		return
	}
	link := LinkName(l.Dir, podName, namespace, container, id)
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		klog.InfoS("Cannot remove the container log symlink", "link", link, "err", err)
	}
}

// RemoveDangling deletes the symlinks whose log file is gone (its container or pod
// was removed). Only symlinks into PodLogsDir are touched.
func (l LogLinks) RemoveDangling() {
	if l.Dir == "" {
		return
	}
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		link := filepath.Join(l.Dir, e.Name())
		target, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(target, l.PodLogsDir+string(filepath.Separator)) {
			continue
		}
		if _, err := os.Stat(target); errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
				klog.InfoS("Cannot remove a dangling container log symlink", "link", link, "err", err)
			}
		}
	}
}
