package app

import (
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
	"github.com/nodelet/nodelet/internal/lib/fsutil"
)

// sweepLeftovers removes the temporary files of atomic writes that a crash left where nodelet
// keeps its state: the root directory (checkpoints), its device plugin directory and each pod
// directory (user namespace file, /etc/hosts). It runs before any component writes, and only
// for the daemon: a foreground run may share the root directory with a running one.
func sweepLeftovers(rootDir string) {
	dirs := []string{rootDir, filepath.Join(rootDir, "device-plugins")}
	podsDir := filepath.Join(rootDir, "pods")
	if entries, err := os.ReadDir(podsDir); err == nil {
		for _, e := range entries {
			if e.IsDir() && fsutil.CheckName(e.Name()) == nil {
				dirs = append(dirs, filepath.Join(podsDir, e.Name()))
			}
		}
	}
	for _, dir := range dirs {
		removed, err := atomicfile.SweepTemps(dir)
		if err != nil {
			klog.ErrorS(err, "Failed to remove temporary files left by a crash", "dir", dir)
		}
		if len(removed) > 0 {
			klog.InfoS("Removed temporary files left by a crash", "dir", dir, "files", removed)
		}
	}
}
