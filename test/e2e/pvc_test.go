//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A pod's persistentVolumeClaim, bound by the controller manager to a local PersistentVolume
// for this node, mounts the volume's directory: what the pod writes is on the node's disk.
func TestPersistentVolumeClaimOfALocalVolume(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	dir := t.TempDir()
	c.claimLocalVolume("data", dir, "1Gi", nil)
	p := podSpec("writer", "echo persisted > /data/proof; exec sleep 3600")
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](3000)}
	c.createPod(p)
	c.waitPodPhase("writer", v1.PodRunning, 90*time.Second)
	testutil.WaitFor(t, 20*time.Second, "the pod's file on the volume", func() (bool, string) {
		raw, err := os.ReadFile(filepath.Join(dir, "proof"))
		return err == nil && strings.TrimSpace(string(raw)) == "persisted", string(raw)
	})
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if gid := st.Sys().(*syscall.Stat_t).Gid; gid != 3000 || st.Mode()&os.ModeSetgid == 0 {
		t.Errorf("local volume: group %d, mode %v; want the pod's fsGroup 3000 and setgid", gid, st.Mode())
	}

	// A second pod on the same claim shares the volume with the first.
	reader := podSpec("reader", "cat /data/proof > /data/seen && exec sleep 3600")
	reader.Spec.Volumes = p.Spec.Volumes
	reader.Spec.Containers[0].VolumeMounts = p.Spec.Containers[0].VolumeMounts
	c.createPod(reader)
	c.waitPodPhase("reader", v1.PodRunning, 90*time.Second)
	testutil.WaitFor(t, 20*time.Second, "the second pod read the first one's file", func() (bool, string) {
		raw, err := os.ReadFile(filepath.Join(dir, "seen"))
		return err == nil && strings.TrimSpace(string(raw)) == "persisted", string(raw)
	})
}

// claimLocalVolume makes a local PersistentVolume of path for this node (removed at cleanup)
// and claim bound to it, of size and mode (nil: Filesystem).
func (c *cluster) claimLocalVolume(claim, path, size string, mode *v1.PersistentVolumeMode) {
	c.t.Helper()
	pvName := c.localVolume(path, size, mode)
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: ptr.To("e2e-manual"),
			VolumeName: pvName, VolumeMode: mode,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if _, err := c.admin.CoreV1().PersistentVolumeClaims(c.ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// localVolume makes a local PersistentVolume of path for this node, of storage class
// e2e-manual, size and mode (nil: Filesystem), removed at cleanup, and returns its name.
func (c *cluster) localVolume(path, size string, mode *v1.PersistentVolumeMode) string {
	c.t.Helper()
	ctx := context.Background()
	pvName := "e2e-local-" + rand.String(5)
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			VolumeMode:                    mode,
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              "e2e-manual",
			PersistentVolumeSource:        v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
			}}}},
		},
	}
	if _, err := c.admin.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		_ = c.admin.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	return pvName
}
