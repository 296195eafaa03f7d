package main

import (
	"context"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

const (
	annProvisioner     = "volume.kubernetes.io/storage-provisioner"
	annBetaProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	annProvisionedBy   = "pv.kubernetes.io/provisioned-by"
	fsTypeParameter    = "csi.storage.k8s.io/fstype"
)

// runSidecars does, every half second, what external-provisioner and external-attacher do
// for a real driver: a PV for each pending claim the PV controller handed to this driver, the
// deletion of released volumes whose policy is Delete, and the attachment of VolumeAttachments.
func runSidecars(ctx context.Context, o options) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		klog.ErrorS(err, "No API access; not provisioning or attaching")
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.ErrorS(err, "No API access; not provisioning or attaching")
		return
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		provision(ctx, cs, o)
		resize(ctx, cs, o)
		reclaim(ctx, cs, o)
		attach(ctx, cs, o)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func provision(ctx context.Context, cs kubernetes.Interface, o options) {
	claims, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		klog.ErrorS(err, "Listing claims")
		return
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if pvc.Status.Phase != v1.ClaimPending || pvc.Spec.VolumeName != "" || pvc.Spec.StorageClassName == nil ||
			(pvc.Annotations[annProvisioner] != o.name && pvc.Annotations[annBetaProvisioner] != o.name) {
			continue
		}
		class, err := cs.StorageV1().StorageClasses().Get(ctx, *pvc.Spec.StorageClassName, metav1.GetOptions{})
		if err != nil {
			klog.ErrorS(err, "Reading the claim's StorageClass", "claim", klog.KObj(pvc))
			continue
		}
		pv := volumeFor(pvc, class, o)
		create := func() error { return createVolume(o.dataDir, pv.Name) }
		if pvc.Spec.VolumeMode != nil && *pvc.Spec.VolumeMode == v1.PersistentVolumeBlock {
			size := pvc.Spec.Resources.Requests[v1.ResourceStorage]
			create = func() error { return createBlockVolume(o.dataDir, pv.Name, size.Value()) }
		}
		if err := create(); err != nil {
			klog.ErrorS(err, "Creating the volume", "claim", klog.KObj(pvc))
			continue
		}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			klog.ErrorS(err, "Creating the PV", "claim", klog.KObj(pvc))
			continue
		}
		klog.InfoS("Provisioned", "claim", klog.KObj(pvc), "pv", pv.Name)
	}
}

// volumeFor is the PV for pvc: pre-bound to it, on this node only.
func volumeFor(pvc *v1.PersistentVolumeClaim, class *storagev1.StorageClass, o options) *v1.PersistentVolume {
	attrs := map[string]string{}
	for k, v := range class.Parameters {
		if !strings.HasPrefix(k, "csi.storage.k8s.io/") {
			attrs[k] = v
		}
	}
	policy := v1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(pvc.UID), Annotations: map[string]string{annProvisionedBy: o.name}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: pvc.Spec.Resources.Requests[v1.ResourceStorage]},
			AccessModes: pvc.Spec.AccessModes, VolumeMode: pvc.Spec.VolumeMode,
			ClaimRef: &v1.ObjectReference{
				APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeReclaimPolicy: policy, StorageClassName: class.Name, MountOptions: class.MountOptions,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: o.name, VolumeHandle: "pvc-" + string(pvc.UID), FSType: class.Parameters[fsTypeParameter], VolumeAttributes: attrs,
			}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: topologyKey(o.name), Operator: v1.NodeSelectorOpIn, Values: []string{o.nodeID}}},
			}}}},
		},
	}
}

// resize grows the PV of a claim that asks for more (what external-resizer does after
// ControllerExpandVolume) and leaves the node step to the kubelet: FileSystemResizePending and
// allocatedResourceStatuses NodeResizePending on the claim.
func resize(ctx context.Context, cs kubernetes.Interface, o options) {
	claims, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		klog.ErrorS(err, "Listing claims")
		return
	}
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		klog.ErrorS(err, "Listing PVs")
		return
	}
	byName := map[string]*v1.PersistentVolume{}
	for i := range pvs.Items {
		if pv := &pvs.Items[i]; pv.Spec.CSI != nil && pv.Spec.CSI.Driver == o.name {
			byName[pv.Name] = pv
		}
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		want, has := pvc.Spec.Resources.Requests[v1.ResourceStorage]
		pv := byName[pvc.Spec.VolumeName]
		if pvc.Status.Phase != v1.ClaimBound || !has || pv == nil {
			continue
		}
		if size := pv.Spec.Capacity[v1.ResourceStorage]; size.Cmp(want) >= 0 {
			continue
		}
		pv.Spec.Capacity[v1.ResourceStorage] = want
		if _, err := cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			klog.ErrorS(err, "Growing the PV", "pv", pv.Name)
			continue
		}
		pvc.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: want}
		pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}
		pvc.Status.Conditions = append(pvc.Status.Conditions, v1.PersistentVolumeClaimCondition{
			Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(),
			Message: "Waiting for user to (re-)start a pod to finish file system resize of volume on node.",
		})
		if _, err := cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			klog.ErrorS(err, "Marking the claim's node resize pending", "claim", klog.KObj(pvc))
			continue
		}
		klog.InfoS("Resized", "pv", pv.Name, "size", want.String())
	}
}

func reclaim(ctx context.Context, cs kubernetes.Interface, o options) {
	pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		klog.ErrorS(err, "Listing PVs")
		return
	}
	for _, pv := range pvs.Items {
		if pv.Annotations[annProvisionedBy] != o.name || pv.Status.Phase != v1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete || pv.Spec.CSI == nil {
			continue
		}
		if err := deleteVolume(o.dataDir, pv.Spec.CSI.VolumeHandle); err != nil {
			klog.ErrorS(err, "Deleting the volume", "pv", pv.Name)
			continue
		}
		if err := cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			klog.ErrorS(err, "Deleting the PV", "pv", pv.Name)
		}
	}
}

func attach(ctx context.Context, cs kubernetes.Interface, o options) {
	vas, err := cs.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		klog.ErrorS(err, "Listing VolumeAttachments")
		return
	}
	for i := range vas.Items {
		va := &vas.Items[i]
		if va.Spec.Attacher != o.name || va.Status.Attached || va.DeletionTimestamp != nil {
			continue
		}
		va.Status.Attached = true
		va.Status.AttachmentMetadata = map[string]string{"attachedBy": o.name}
		if _, err := cs.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil {
			klog.ErrorS(err, "Marking attached", "volumeAttachment", va.Name)
			continue
		}
		klog.InfoS("Attached", "volumeAttachment", va.Name)
	}
}
