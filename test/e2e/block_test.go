//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

const blockMark = "nodelet-block"

// blockWriter is a pod that writes blockMark at the start of the device its claim maps at
// /dev/xvda, flushes it, and sleeps.
func blockWriter(name, claim string) *v1.Pod {
	p := podSpec(name, "printf "+blockMark+" > /dev/xvda && sync && exec sleep 3600")
	p.Spec.Volumes = []v1.Volume{{Name: "disk", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	p.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}}
	return p
}

// waitMarked waits until the image file behind a block volume starts with blockMark.
func waitMarked(t *testing.T, image string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, "the pod's bytes at the start of "+image, func() (bool, string) {
		f, err := os.Open(image)
		if err != nil {
			return false, err.Error()
		}
		defer f.Close()
		head := make([]byte, len(blockMark))
		_, err = f.Read(head)
		return bytes.Equal(head, []byte(blockMark)), fmt.Sprintf("%q %v", head, err)
	})
}

// A claim of volumeMode Block on the test CSI driver is staged and published as a device, and
// the container's volumeDevices entry maps it: what the pod writes to /dev/xvda is in the
// volume's image. Deleting the pod unpublishes and unstages it.
func TestCSIBlockVolumeIsMappedIntoTheContainer(t *testing.T) {
	c, d := csiCluster(t, nil, storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}, "--kubeconfig="+adminKubeconfig)
	ctx := context.Background()
	c.createClaim("disk", c.createStorageClass(d), "16Mi", ptr.To(v1.PersistentVolumeBlock))
	c.createPod(blockWriter("blk", "disk"))
	c.waitPodPhase("blk", v1.PodRunning, 2*time.Minute)
	bound, err := c.admin.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, "disk", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitMarked(t, filepath.Join(d.dataDir, bound.Spec.VolumeName+".img"))
	staged := d.callsOf("NodeStageVolume", time.Time{})
	if len(staged) != 1 || len(d.callsOf("NodePublishVolume", time.Time{})) != 1 {
		t.Fatalf("stage %d, publish %d calls; want one each", len(staged), len(d.callsOf("NodePublishVolume", time.Time{})))
	}
	if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, "blk", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "the block volume unpublished and unstaged", func() (bool, string) {
		left := csiMounts(t, c.rootDir)
		return len(left) == 0 && len(d.callsOf("NodeUnstageVolume", time.Time{})) == 1, fmt.Sprint(left)
	})
}

// A local PersistentVolume of volumeMode Block (a loop device here) is mapped into the
// container by its volumeDevices entry.
func TestLocalBlockVolumeIsMappedIntoTheContainer(t *testing.T) {
	c := joinCluster(t)
	c.waitReady(t)
	image := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(image, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", image).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	c.claimLocalVolume("disk", dev, "8Mi", ptr.To(v1.PersistentVolumeBlock))
	c.createPod(blockWriter("blk", "disk"))
	c.waitPodPhase("blk", v1.PodRunning, 90*time.Second)
	waitMarked(t, image)
}
