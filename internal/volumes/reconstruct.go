package volumes

import (
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// reconstruct fills the actual state with the volumes found under the root dir
// (pods/<uid>/volumes/<plugin>/<name>), as uncertain: a desired pod's SetUp runs once more
// and finds them in place; those no pod wants are torn down once their pod's containers are
// gone, their subPath mounts first. Directories of plugins nodelet lacks are left alone, with
// their volumes' subPath mounts; subPath mounts of no volume at all are unmounted now.
func (m *Manager) reconstruct() {
	podsDir := filepath.Join(m.rootDir, "pods")
	pods, err := os.ReadDir(podsDir)
	if err != nil {
		if !os.IsNotExist(err) {
			klog.ErrorS(err, "Cannot read the pods directory; no volume is reconstructed", "path", podsDir)
		}
		return
	}
	found := 0
	for _, p := range pods {
		if !p.IsDir() {
			continue
		}
		uid := types.UID(p.Name())
		names := map[string]bool{}
		plugins, _ := os.ReadDir(filepath.Join(podsDir, p.Name(), "volumes"))
		for _, pl := range plugins {
			vols, _ := os.ReadDir(filepath.Join(podsDir, p.Name(), "volumes", pl.Name()))
			for _, v := range vols {
				names[v.Name()] = true
			}
			plugin := m.pluginNamed(pl.Name())
			if plugin == nil || !pl.IsDir() {
				klog.InfoS("Volume directory of an unknown plugin left alone", "podUID", uid, "plugin", pl.Name())
				continue
			}
			for _, v := range vols {
				m.actual.markUncertain(volumeKey{uid, v.Name()}, plugin, m.volumeDir(uid, plugin.Name(), v.Name()))
				found++
			}
		}
		m.cleanStraySubPaths(uid, names)
	}
	if found > 0 {
		klog.InfoS("Reconstructed volumes from the root dir", "volumes", found)
	}
}

// cleanStraySubPaths unmounts the subPath mounts of pod uid whose volume is not among
// volumes: nothing will tear that volume down and clean them. A container still running
// keeps its own mount.
func (m *Manager) cleanStraySubPaths(uid types.UID, volumes map[string]bool) {
	vols, _ := os.ReadDir(filepath.Join(m.podDir(uid), subPathsDir))
	for _, v := range vols {
		if volumes[v.Name()] {
			continue
		}
		if err := m.cleanSubPaths(uid, v.Name()); err != nil {
			klog.ErrorS(err, "Cannot clean the subPath mounts of a volume that is gone", "podUID", uid, "volume", v.Name())
		}
	}
}
