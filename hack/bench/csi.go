package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/volumes/mount"
)

const (
	// csiDriverName is test/csidriver's name in the bench; its CSIDriver asks for attaching,
	// so the attach/detach controller's VolumeAttachments are part of every pod's start.
	csiDriverName = "hostpath.csi.nodelet.test"
	csiClass      = "nlbench-csi"
	csiRun        = "csi"
)

// csiBurst runs test/csidriver for the kubelet under test (registered through its
// plugins_registry), provisions one claim per pod beforehand, then creates the pods at once
// and times each from its create call to Running: registration, the wait for the attachment,
// stage and publish, on the same driver for both kubelets. Pods, claims and volumes are gone,
// and nothing is mounted below the root dir, when it returns.
func (b *bench) csiBurst(ctx context.Context, subject, ns, root string) (latencies, error) {
	n := b.p.csiPods
	if err := b.ensureCSIObjects(ctx); err != nil {
		return latencies{}, err
	}
	driver, err := startProcess("CSI driver", b.o.csiDriverBin, []string{
		"--name=" + csiDriverName, "--kubelet-dir=" + root, "--data-dir=" + filepath.Join(b.o.workDir, "csi-data"),
		"--node-id=" + nodeName, "--kubeconfig=" + b.o.kubeconfig,
	}, filepath.Join(b.o.workDir, "csidriver.log"))
	if err != nil {
		return latencies{}, fmt.Errorf("start the test CSI driver (make csidriver): %w", err)
	}
	defer driver.stop()
	if err := b.waitCSINode(ctx, subject); err != nil {
		return latencies{}, err
	}
	if err := b.createClaims(ctx, ns, n); err != nil {
		return latencies{}, err
	}
	build := func(i int) *v1.Pod {
		p := benchPod(fmt.Sprintf("%s-%03d", csiRun, i), csiRun, v1.RestartPolicyAlways, "sleep")
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(i)}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return p
	}
	l, err := b.claimBurst(ctx, subject, ns, csiRun, fmt.Sprintf("%d pods with a CSI volume", n), n, build)
	if err != nil {
		return l, err
	}
	return l, b.removeClaims(ctx, subject, ns, root)
}

// ensureCSIObjects makes the driver's CSIDriver and StorageClass (kept between subjects).
func (b *bench) ensureCSIObjects(ctx context.Context) error {
	bind := storagev1.VolumeBindingImmediate
	_, err := b.kube.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: csiDriverName},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(false)},
	}, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) {
		_, err = b.kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: csiClass}, Provisioner: csiDriverName, VolumeBindingMode: &bind,
		}, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the test CSI driver's CSIDriver and StorageClass: %w", err)
	}
	return nil
}

// waitCSINode waits until the kubelet lists the driver in the node's CSINode.
func (b *bench) waitCSINode(ctx context.Context, subject string) error {
	err := b.poll(ctx, time.Minute, func() (bool, error) {
		cn, err := b.kube.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == csiDriverName {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s did not register the test CSI driver: %w", subject, err)
	}
	return nil
}

func claimName(i int) string { return fmt.Sprintf("%s-%03d", csiRun, i) }

// createClaims makes n claims of the driver's class and waits until they are bound.
func (b *bench) createClaims(ctx context.Context, ns string, n int) error {
	errs := make([]error, n)
	forEach(n, 8, func(i int) {
		_, errs[i] = b.kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claimName(i)},
			Spec: v1.PersistentVolumeClaimSpec{
				AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: ptr.To(csiClass),
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("16Mi")}},
			},
		}, metav1.CreateOptions{})
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("create the CSI claims: %w", err)
	}
	return b.poll(ctx, 2*time.Minute, func() (bool, error) {
		claims, err := b.kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, c := range claims.Items {
			if c.Status.Phase == v1.ClaimBound {
				bound++
			}
		}
		return bound == n, nil
	})
}

// removeClaims deletes the claims and waits until the driver has deleted their volumes and
// nothing is mounted below root any more; what is still mounted then is detached, so the
// next subject's fresh root dir cannot reach into a volume.
func (b *bench) removeClaims(ctx context.Context, subject, ns, root string) error {
	if err := b.kube.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete the CSI claims: %w", err)
	}
	err := b.poll(ctx, 2*time.Minute, func() (bool, error) {
		pvs, err := b.kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, pv := range pvs.Items {
			if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == csiDriverName {
				return false, nil
			}
		}
		left, err := mountsBelow(root)
		return err == nil && len(left) == 0, err
	})
	if err != nil {
		left, _ := mountsBelow(root)
		for _, p := range left {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
		}
		return fmt.Errorf("%s: CSI volumes not cleaned up (still mounted: %v): %w", subject, left, err)
	}
	return nil
}

// mountsBelow lists the mounts below root, not root itself: the upstream kubelet bind-mounts
// its root dir on itself to make it shared.
func mountsBelow(root string) ([]string, error) {
	points, err := mount.ReadPoints(mount.Mountinfo)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(mount.Under(points, root), func(p string) bool { return p == filepath.Clean(root) }), nil
}

// claimBurst creates n pods of build at once, each with a claim of its own (a CSI volume, a DRA
// device), times each from its create call to Running, says the run's p50, p99 and all, and
// deletes the pods again, waiting until the kubelet has finished them.
func (b *bench) claimBurst(ctx context.Context, subject, ns, run, what string, n int, build func(i int) *v1.Pod) (latencies, error) {
	l, _, err := b.launchPods(ctx, subject, ns, run, what, n, build, 2*time.Minute+time.Duration(n)*2*time.Second)
	if err != nil {
		return l, err
	}
	progress(subject, "%s: p50 %v, p99 %v, all %v", what, ms(l.pct(50)), ms(l.pct(99)), ms(l.all))
	return l, b.deleteRun(ctx, subject, ns, run, n)
}
