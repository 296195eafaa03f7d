package cm

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// PodUIDs lists the pods that have a cgroup under kubepods in any hierarchy.
func (m *QOSCgroups) PodUIDs() ([]types.UID, error) {
	seen := map[types.UID]bool{}
	for _, h := range m.all {
		for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
			entries, err := os.ReadDir(filepath.Join(h.dir, m.qosPath(class)))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if uid, ok := m.podUID(class, e.Name()); ok && e.IsDir() {
					seen[types.UID(uid)] = true
				}
			}
		}
	}
	uids := make([]types.UID, 0, len(seen))
	for uid := range seen {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	return uids, nil
}

// PodCgroup is the path of the pod's cgroup, found among the QoS classes' cgroups in the
// memory hierarchy, or "" when the pod has none.
func (m *QOSCgroups) PodCgroup(uid types.UID) string {
	h, ok := m.hierarchyWith("memory")
	if !ok {
		return ""
	}
	for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		cgroup := path.Join(m.qosPath(class), m.podName(class, uid))
		if _, err := os.Stat(filepath.Join(h.dir, cgroup)); err == nil {
			return cgroup
		}
	}
	return ""
}

// SweepOrphans removes the cgroups of pods that keep disowns on two sweeps in a row. The
// second look spares a pod whose cgroup was made after the caller's view of its pods was
// taken (by this node or by another nodelet sharing the host). It returns the removed pods;
// a cgroup that cannot be removed yet (processes still in it) is tried again next sweep.
func (m *QOSCgroups) SweepOrphans(keep func(types.UID) bool) ([]types.UID, error) {
	uids, err := m.PodUIDs()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	previous := m.suspects
	m.suspects = map[types.UID]bool{}
	m.mu.Unlock()
	var removed []types.UID
	var errs []error
	for _, uid := range uids {
		if keep(uid) {
			continue
		}
		if !previous[uid] {
			m.markSuspect(uid)
			continue
		}
		if err := m.RemovePod(uid); err != nil {
			m.markSuspect(uid)
			errs = append(errs, err)
			continue
		}
		klog.V(2).InfoS("Removed the cgroup of a pod that no longer exists", "podUID", uid)
		removed = append(removed, uid)
	}
	return removed, errors.Join(errs...)
}

func (m *QOSCgroups) markSuspect(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.suspects[uid] = true
}
