package volumes

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// ClaimResizer records in a claim's status that its volume grew on the node: the capacity,
// and no resize pending any more.
type ClaimResizer interface {
	MarkClaimResized(ctx context.Context, pvc *v1.PersistentVolumeClaim, capacity int64) error
}

const (
	// Upstream's event reasons for growing a mounted volume on the node.
	reasonResizeSuccessful = "FileSystemResizeSuccessful"
	reasonResizeFailed     = "FileSystemResizeFailed"
)

// expansionWanted returns the size a mounted claim volume should grow to on the node, or 0:
// its PersistentVolume is larger than the claim's status capacity (the controller side
// grew it) and it has not been grown to that size here yet.
func (m *Manager) expansionWanted(dv desiredVolume, mv mountedVolume) int64 {
	s := dv.spec
	if s.Claim == nil || s.PV == nil || m.resizer == nil || s.ReadOnly {
		return 0
	}
	if _, ok := dv.plugin.(Expander); !ok {
		return 0
	}
	pvSize, ok := s.PV.Spec.Capacity[v1.ResourceStorage]
	if !ok {
		return 0
	}
	statusSize := s.Claim.Status.Capacity[v1.ResourceStorage]
	if statusSize.Cmp(pvSize) >= 0 || mv.expandedTo >= pvSize.Value() {
		return 0
	}
	return pvSize.Value()
}

// expand grows a mounted volume on the node, then records the new size in its claim.
func (r *reconciler) expand(ctx context.Context, pod *v1.Pod, k volumeKey, dv desiredVolume, dir string, size int64) {
	start := time.Now()
	err := dv.plugin.(Expander).ExpandMounted(ctx, dv.spec, dir)
	if err == nil {
		err = r.m.resizer.MarkClaimResized(ctx, dv.spec.Claim, size)
	}
	if err != nil {
		klog.ErrorS(err, "MountVolume.NodeExpandVolume failed", "pod", klog.KObj(pod), "volume", k.name)
		r.recorder.Eventf(pod, v1.EventTypeWarning, reasonResizeFailed, "MountVolume.NodeExpandVolume failed for volume %q : %v", k.name, err)
		r.finish(k, true)
		return
	}
	r.m.actual.markExpanded(k, size)
	klog.InfoS("MountVolume.NodeExpandVolume succeeded", "pod", klog.KObj(pod), "volume", k.name, "bytes", size, "took", time.Since(start))
	r.recorder.Eventf(pod, v1.EventTypeNormal, reasonResizeSuccessful, "MountVolume.NodeExpandVolume succeeded for volume %q %s", k.name, pod.Spec.NodeName)
	r.finish(k, false)
}

// markExpanded records that the volume was grown to size on the node.
func (a *actualState) markExpanded(k volumeKey, size int64) {
	a.update(k.uid, func(vols map[string]*mountedVolume) bool {
		if v := vols[k.name]; v != nil {
			v.expandedTo = size
		}
		return false
	})
}
