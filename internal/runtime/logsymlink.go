package runtime

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// containerLogLink names the symlink of one container instance. Names are cut to the file
// name limit, keeping the ".log" suffix.
func containerLogLink(dir, podName, namespace, container, id string) string {
	name := podName + "_" + namespace + "_" + container + "-" + id
	const maxName = 255 - len(".log")
	if len(name) > maxName {
		name = name[:maxName]
	}
	return filepath.Join(dir, name+".log")
}

// linkContainerLog points the container's symlink at its log file. Failure only logs: the
// log is still reachable through the API.
func (m *Manager) linkContainerLog(pod *v1.Pod, container, id, logFile string) {
	if m.containerLogsDir == "" {
		return
	}
	link := containerLogLink(m.containerLogsDir, pod.Name, pod.Namespace, container, id)
	err := os.MkdirAll(m.containerLogsDir, 0o755)
	if err == nil {
		err = os.Symlink(logFile, link)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		klog.InfoS("Cannot create the container log symlink", "pod", klog.KObj(pod), "container", container, "link", link, "err", err)
	}
}

// unlinkContainerLog removes one container's symlink (the container was removed).
func (m *Manager) unlinkContainerLog(podName, namespace, container, id string) {
	if m.containerLogsDir == "" {
		return
	}
	link := containerLogLink(m.containerLogsDir, podName, namespace, container, id)
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		klog.InfoS("Cannot remove the container log symlink", "link", link, "err", err)
	}
}

// removeDanglingLogLinks deletes the symlinks whose log file is gone (its container or pod
// was removed). Only symlinks into podLogsDir are touched.
func (m *Manager) removeDanglingLogLinks() {
	if m.containerLogsDir == "" {
		return
	}
	entries, err := os.ReadDir(m.containerLogsDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		link := filepath.Join(m.containerLogsDir, e.Name())
		target, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(target, m.podLogsDir+string(filepath.Separator)) {
			continue
		}
		if _, err := os.Stat(target); errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
				klog.InfoS("Cannot remove a dangling container log symlink", "link", link, "err", err)
			}
		}
	}
}
