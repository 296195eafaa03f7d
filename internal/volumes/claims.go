package volumes

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// ClaimGetter reads PersistentVolumeClaims and PersistentVolumes.
type ClaimGetter interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// claimedVolume resolves volume's claim ref to its PersistentVolume: the claim must be bound
// (and not being deleted) and the volume bound back to it.
func (m *Manager) claimedVolume(ctx context.Context, ns, volume string, ref *v1.PersistentVolumeClaimVolumeSource) (*v1.PersistentVolumeClaim, *v1.PersistentVolume, error) {
	if m.claims == nil {
		return nil, nil, fmt.Errorf("volume %q: persistentVolumeClaim %q needs the API server; nodelet runs standalone", volume, ref.ClaimName)
	}
	pvc, err := m.claims.GetPersistentVolumeClaim(ctx, ns, ref.ClaimName)
	if err != nil {
		return nil, nil, fmt.Errorf("error processing PVC %s/%s: %w", ns, ref.ClaimName, err)
	}
	if pvc.DeletionTimestamp != nil {
		return nil, nil, fmt.Errorf("can't start pod because PVC %s/%s is being deleted", ns, ref.ClaimName)
	}
	if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil, nil, fmt.Errorf("PVC %s/%s has non-bound phase (%q) or empty pvc.Spec.VolumeName (%q)",
			ns, ref.ClaimName, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	pv, err := m.claims.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return nil, nil, fmt.Errorf("error processing PV %s of PVC %s/%s: %w", pvc.Spec.VolumeName, ns, ref.ClaimName, err)
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return nil, nil, fmt.Errorf("PV %s is not bound to PVC %s/%s (pvc.UID != pv.Spec.ClaimRef.UID)", pv.Name, ns, ref.ClaimName)
	}
	return pvc, pv, nil
}

// checkNodeAffinity refuses a PersistentVolume whose required node affinity this node does
// not match; it is part of mounting, as upstream checks it.
func (m *Manager) checkNodeAffinity(pv *v1.PersistentVolume) error {
	if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
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
