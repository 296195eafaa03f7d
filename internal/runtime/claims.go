package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// ClaimGetter reads PersistentVolumeClaims and PersistentVolumes. An ObjectGetter that also
// implements it lets pods mount their claims.
type ClaimGetter interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// claimPath resolves a persistentVolumeClaim volume to the directory of its PersistentVolume:
// the claim must be bound (and not being deleted), the volume bound back to it and, when it
// has node affinity, meant for this node. hostPath and local volumes are mounted from their
// path; readOnly is the claim reference's.
func (m *manager) claimPath(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (string, bool, error) {
	ref := vol.PersistentVolumeClaim
	claims, ok := m.objects.(ClaimGetter)
	if !ok {
		return "", false, fmt.Errorf("volume %q: persistentVolumeClaim %q needs the API server; nodelet runs standalone", vol.Name, ref.ClaimName)
	}
	pvc, err := claims.GetPersistentVolumeClaim(ctx, pod.Namespace, ref.ClaimName)
	if err != nil {
		return "", false, fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, ref.ClaimName, err)
	}
	if pvc.DeletionTimestamp != nil {
		return "", false, fmt.Errorf("can't start pod because PVC %s/%s is being deleted", pod.Namespace, ref.ClaimName)
	}
	if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", false, fmt.Errorf("PVC %s/%s has non-bound phase (%q) or empty pvc.Spec.VolumeName (%q)",
			pod.Namespace, ref.ClaimName, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	pv, err := claims.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return "", false, fmt.Errorf("error processing PV %s of PVC %s/%s: %w", pvc.Spec.VolumeName, pod.Namespace, ref.ClaimName, err)
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return "", false, fmt.Errorf("PV %s is not bound to PVC %s/%s (pvc.UID != pv.Spec.ClaimRef.UID)", pv.Name, pod.Namespace, ref.ClaimName)
	}
	if err := m.checkNodeAffinity(pv); err != nil {
		return "", false, err
	}
	switch {
	case pv.Spec.HostPath != nil:
		if err := prepareHostPath(pv.Spec.HostPath); err != nil {
			return "", false, fmt.Errorf("PV %s hostPath: %w", pv.Name, err)
		}
		return pv.Spec.HostPath.Path, ref.ReadOnly, nil
	case pv.Spec.Local != nil:
		st, err := os.Stat(pv.Spec.Local.Path)
		if err != nil {
			return "", false, fmt.Errorf("PV %s local path: %w", pv.Name, err)
		}
		if !st.IsDir() {
			return "", false, fmt.Errorf("PV %s: local path %s is not a directory (block volumes are not supported by nodelet)", pv.Name, pv.Spec.Local.Path)
		}
		return pv.Spec.Local.Path, ref.ReadOnly, nil
	}
	return "", false, fmt.Errorf("PV %s: its volume source is not supported by nodelet (hostPath and local are)", pv.Name)
}

// checkNodeAffinity refuses a volume whose required node affinity this node does not match.
func (m *manager) checkNodeAffinity(pv *v1.PersistentVolume) error {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	if m.node == nil {
		return errors.New("cannot check the volume's node affinity: the node is not known yet")
	}
	node := m.node()
	if node == nil {
		return errors.New("cannot check the volume's node affinity: the node is not registered yet")
	}
	match, err := nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required).Match(node)
	if err != nil || !match {
		return fmt.Errorf("MountVolume.NodeAffinity check failed for volume %q: no matching NodeSelectorTerms (%v)", pv.Name, err)
	}
	return nil
}
