package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/volumes"
)

// HostPath gives containers a path of the node: hostPath volumes and hostPath
// PersistentVolumes. It keeps nothing in the pod's directory, so it has nothing to tear down.
type HostPath struct{}

func (HostPath) Name() string { return "kubernetes.io~host-path" }

func (HostPath) CanSetUp(s *volumes.Spec) bool {
	return s.Volume.HostPath != nil || (s.PV != nil && s.PV.Spec.HostPath != nil)
}

func (HostPath) SetUp(_ context.Context, _ *v1.Pod, s *volumes.Spec, _ string) (volumes.Mount, error) {
	if s.PV != nil {
		if err := prepareHostPath(s.PV.Spec.HostPath); err != nil {
			return volumes.Mount{}, fmt.Errorf("PV %s hostPath: %w", s.PV.Name, err)
		}
		return volumes.Mount{Path: s.PV.Spec.HostPath.Path, ReadOnly: s.ReadOnly}, nil
	}
	if err := prepareHostPath(s.Volume.HostPath); err != nil {
		return volumes.Mount{}, fmt.Errorf("hostPath %q: %w", s.Volume.Name, err)
	}
	return volumes.Mount{Path: s.Volume.HostPath.Path}, nil
}

func (HostPath) TearDown(context.Context, types.UID, string) error { return nil }

// prepareHostPath creates or checks the host path as its type asks.
func prepareHostPath(hp *v1.HostPathVolumeSource) error {
	typ := v1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	switch typ {
	case v1.HostPathDirectoryOrCreate:
		return os.MkdirAll(hp.Path, 0o755)
	case v1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case v1.HostPathUnset:
		return nil
	}
	fi, err := os.Stat(hp.Path)
	if err != nil {
		return err
	}
	mode := fi.Mode()
	ok := map[v1.HostPathType]bool{
		v1.HostPathDirectory: mode.IsDir(),
		v1.HostPathFile:      mode.IsRegular(),
		v1.HostPathSocket:    mode&os.ModeSocket != 0,
		v1.HostPathCharDev:   mode&os.ModeCharDevice != 0,
		v1.HostPathBlockDev:  mode&os.ModeDevice != 0 && mode&os.ModeCharDevice == 0,
	}[typ]
	if !ok {
		return fmt.Errorf("%s is not a %s", hp.Path, typ)
	}
	return nil
}

// Local gives containers the directory of a local PersistentVolume, or its device when the
// volume's mode is Block.
type Local struct{}

func (Local) Name() string { return "kubernetes.io~local-volume" }

func (Local) CanSetUp(s *volumes.Spec) bool { return s.PV != nil && s.PV.Spec.Local != nil }

// SetUp checks the local path and, with a pod fsGroup, gives the volume to that group as
// upstream's local plugin does (unless the claim is read-only).
func (Local) SetUp(_ context.Context, pod *v1.Pod, s *volumes.Spec, _ string) (volumes.Mount, error) {
	path := s.PV.Spec.Local.Path
	st, err := os.Stat(path)
	if err != nil {
		return volumes.Mount{}, fmt.Errorf("PV %s local path: %w", s.PV.Name, err)
	}
	if isBlock(s.PV) {
		if st.Mode()&os.ModeDevice == 0 || st.Mode()&os.ModeCharDevice != 0 {
			return volumes.Mount{}, fmt.Errorf("PV %s has volumeMode Block but its local path %s is not a block device", s.PV.Name, path)
		}
		return volumes.Mount{Path: path, ReadOnly: s.ReadOnly, Block: true}, nil
	}
	if !st.IsDir() {
		return volumes.Mount{}, fmt.Errorf("PV %s: local path %s is not a directory", s.PV.Name, path)
	}
	if group := fsGroup(pod); group != nil && !s.ReadOnly {
		if err := volumes.SetOwnership(path, *group, pod.Spec.SecurityContext.FSGroupChangePolicy, false); err != nil {
			return volumes.Mount{}, fmt.Errorf("PV %s: applying fsGroup %d: %w", s.PV.Name, *group, err)
		}
	}
	// As upstream's local plugin: relabelled unless read-only (then it does not manage it).
	return volumes.Mount{Path: path, ReadOnly: s.ReadOnly, SELinuxRelabel: !s.ReadOnly}, nil
}

func (Local) TearDown(context.Context, types.UID, string) error { return nil }

func isBlock(pv *v1.PersistentVolume) bool {
	return pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock
}
