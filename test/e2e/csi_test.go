//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A StatefulSet of 3 with volumeClaimTemplates on the test CSI driver (registered through
// plugins_registry, provisioning and attaching through the API server): each replica gets
// its own volume, staged and published by nodelet, owned by the pod's fsGroup; a restart of
// nodelet neither publishes again nor unmounts; deleted pods come back to their data; every
// stage and publish came after the Node listed the volume in volumesInUse; scaled to zero,
// every volume is unpublished and unstaged and the attachments can go.
func TestCSIStatefulSetKeepsItsData(t *testing.T) {
	c, d := csiCluster(t, nil, storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}, "--kubeconfig="+adminKubeconfig)
	node := c.node()
	if got := node.Labels["topology."+d.name+"/node"]; got != nodeName {
		t.Fatalf("topology label = %q, want %q", got, nodeName)
	}
	if !strings.Contains(node.Annotations["csi.volume.kubernetes.io/nodeid"], fmt.Sprintf("%q:%q", d.name, nodeName)) {
		t.Fatalf("node ID annotation = %q", node.Annotations["csi.volume.kubernetes.io/nodeid"])
	}
	ctx := context.Background()
	class := c.createStorageClass(d)
	sts := statefulSet("db", class)
	if _, err := c.admin.AppsV1().StatefulSets(c.ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := []string{"db-0", "db-1", "db-2"}
	for _, p := range pods {
		c.waitPodPhase(p, v1.PodRunning, 2*time.Minute)
	}
	volumeDirs := c.claimDirs(d, pods)
	for i, dir := range volumeDirs {
		testutil.WaitFor(t, 20*time.Second, pods[i]+"'s line on its volume", func() (bool, string) {
			raw, _ := os.ReadFile(filepath.Join(dir, "log"))
			return strings.Count(string(raw), pods[i]) == 1, string(raw)
		})
		st, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if gid := st.Sys().(*syscall.Stat_t).Gid; gid != 2000 || st.Mode()&os.ModeSetgid == 0 {
			t.Errorf("%s: group %d, mode %v; want fsGroup 2000 and setgid", dir, gid, st.Mode())
		}
	}
	points := csiMounts(t, c.rootDir)
	if len(targetMounts(points)) != 3 || len(stagingMounts(points)) != 3 {
		t.Fatalf("want 3 published and 3 staged volumes, mounted: %v", points)
	}
	published := d.callsOf("NodePublishVolume", time.Time{})
	if len(published) != 3 || published[0].Context["csi.storage.k8s.io/pod.namespace"] != c.ns {
		t.Fatalf("NodePublishVolume calls: %+v", published)
	}
	c.waitAttached(d, 3)
	c.checkCSIVolumeReports(d)

	// A restart finds the volumes in place: no call to the driver, nothing unmounted.
	c.stop(syscall.SIGTERM)
	restarted := time.Now()
	c.start()
	time.Sleep(10 * time.Second)
	if calls := append(d.callsOf("NodePublishVolume", restarted), d.callsOf("NodeUnpublishVolume", restarted)...); len(calls) > 0 {
		t.Fatalf("after a restart nodelet called the driver again: %+v", calls)
	}
	if after := csiMounts(t, c.rootDir); !slices.Equal(after, points) {
		t.Fatalf("mounts changed across a restart:\nbefore %v\nafter  %v", points, after)
	}

	// Deleted pods come back to their own data.
	for _, p := range pods {
		if err := c.admin.CoreV1().Pods(c.ns).Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, dir := range volumeDirs {
		testutil.WaitFor(t, 3*time.Minute, pods[i]+" back on its data", func() (bool, string) {
			raw, _ := os.ReadFile(filepath.Join(dir, "log"))
			return strings.Count(string(raw), pods[i]) == 2, string(raw)
		})
	}
	checkListedInUseFirst(t, d)

	// Scaled to zero: every volume unpublished and unstaged, the attachments removable.
	scaleDown := time.Now()
	if _, err := c.admin.AppsV1().StatefulSets(c.ns).Patch(ctx, "db", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 2*time.Minute, "every CSI volume unpublished and unstaged", func() (bool, string) {
		left := csiMounts(t, c.rootDir)
		return len(left) == 0 && len(d.callsOf("NodeUnstageVolume", scaleDown)) == 3, fmt.Sprint(left)
	})
	c.waitAttached(d, 0)
	if entries, _ := os.ReadDir(filepath.Join(c.rootDir, "plugins", "kubernetes.io", "csi", d.name)); len(entries) != 0 {
		t.Errorf("staging directories left: %v", entries)
	}
}

// checkListedInUseFirst: as upstream, nodelet staged and published each attached volume only
// once the Node listed it in status.volumesInUse (the driver read the Node at each call), the
// attach/detach controller's guard against detaching a volume being mounted.
func checkListedInUseFirst(t *testing.T, d *csiDriver) {
	t.Helper()
	for _, method := range []string{"NodeStageVolume", "NodePublishVolume"} {
		calls := d.callsOf(method, time.Time{})
		if len(calls) == 0 {
			t.Errorf("no %s calls", method)
		}
		for _, c := range calls {
			switch {
			case c.ListedInUse == nil:
				t.Errorf("%s of %s: the driver could not read the Node (see its log)", method, c.VolumeID)
			case !*c.ListedInUse:
				t.Errorf("%s of %s at %s: the Node did not list the volume in volumesInUse yet",
					method, c.VolumeID, c.Time.Format(time.RFC3339Nano))
			}
		}
	}
}

// A driver that goes away leaves the pods that need it with upstream's FailedMount; it
// registers again when it comes back, and the pod starts. An inline ephemeral volume of the
// same driver lives and dies with its pod.
func TestCSIDriverThatGoesAwayAndComesBack(t *testing.T) {
	c, d := csiCluster(t, nil, storagev1.CSIDriverSpec{AttachRequired: ptr.To(false),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}},
		"--stage=false")
	d.stop()
	testutil.WaitFor(t, 30*time.Second, "driver removed from the CSINode", func() (bool, string) {
		cn, err := c.admin.StorageV1().CSINodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !slices.ContainsFunc(cn.Spec.Drivers, func(x storagev1.CSINodeDriver) bool { return x.Name == d.name }), "still listed"
	})
	p := podSpec("inline", "echo hello > /scratch/f && exec sleep 3600")
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: d.name}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	c.createPod(p)
	want := "driver name " + d.name + " not found in the list of registered CSI drivers"
	c.waitEvent("inline", "FailedMount", want, time.Minute)

	d.start()
	c.waitPodPhase("inline", v1.PodRunning, 2*time.Minute)
	published := d.callsOf("NodePublishVolume", time.Time{})
	if len(published) != 1 || published[0].Context["csi.storage.k8s.io/ephemeral"] != "true" {
		t.Fatalf("NodePublishVolume calls: %+v", published)
	}
	volume := filepath.Join(d.dataDir, published[0].VolumeID)
	testutil.WaitFor(t, 20*time.Second, "the pod's file on its inline volume", func() (bool, string) {
		raw, err := os.ReadFile(filepath.Join(volume, "f"))
		return err == nil && strings.TrimSpace(string(raw)) == "hello", fmt.Sprint(err)
	})
	if err := c.admin.CoreV1().Pods(c.ns).Delete(context.Background(), "inline", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "inline volume unpublished and gone", func() (bool, string) {
		_, err := os.Stat(volume)
		return len(d.callsOf("NodeUnpublishVolume", time.Time{})) == 1 && os.IsNotExist(err), fmt.Sprint(err)
	})
}

// checkCSIVolumeReports: the node reports the three volumes in use, /stats/summary carries
// each claim's figures from the driver, and /metrics the kubelet_volume_stats_* series.
func (c *cluster) checkCSIVolumeReports(d *csiDriver) {
	c.t.Helper()
	testutil.WaitFor(c.t, 30*time.Second, "3 volumes in the node's volumesInUse", func() (bool, string) {
		inUse := c.node().Status.VolumesInUse
		n := 0
		for _, v := range inUse {
			if strings.HasPrefix(string(v), "kubernetes.io/csi/"+d.name+"^pvc-") {
				n++
			}
		}
		return n == 3, fmt.Sprint(inUse)
	})
	var summary statsapi.Summary
	if err := json.Unmarshal([]byte(kubectl(c.t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/stats/summary")), &summary); err != nil {
		c.t.Fatal(err)
	}
	claims := 0
	for _, p := range summary.Pods {
		for _, v := range p.VolumeStats {
			if v.PVCRef != nil && v.PVCRef.Namespace == c.ns && v.CapacityBytes != nil && *v.CapacityBytes > 0 &&
				v.UsedBytes != nil && *v.UsedBytes > 0 && v.Inodes != nil {
				claims++
			}
		}
	}
	if claims != 3 {
		c.t.Fatalf("/stats/summary has figures for %d of the 3 claims", claims)
	}
	metrics := kubectl(c.t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/metrics")
	for _, p := range []string{"db-0", "db-1", "db-2"} {
		series := fmt.Sprintf(`kubelet_volume_stats_used_bytes{namespace=%q,persistentvolumeclaim="data-%s"}`, c.ns, p)
		if !strings.Contains(metrics, series) {
			c.t.Fatalf("/metrics lacks %s", series)
		}
	}
}

// A claim grown while its pod runs: the driver's resizer grows the PV and leaves the node step
// pending; nodelet calls NodeExpandVolume at the pod's next sync and records the new size in
// the claim's status, with upstream's event.
func TestCSIVolumeGrowsWhileMounted(t *testing.T) {
	c, d := csiCluster(t, []string{"--sync-frequency=10s"}, storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}, "--kubeconfig="+adminKubeconfig)
	ctx := context.Background()
	c.createClaim("data", c.createStorageClass(d), "64Mi", nil)
	p := podSpec("grower", "exec sleep 3600")
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	c.createPod(p)
	c.waitPodPhase("grower", v1.PodRunning, 2*time.Minute)

	grow := []byte(`{"spec":{"resources":{"requests":{"storage":"128Mi"}}}}`)
	if _, err := c.admin.CoreV1().PersistentVolumeClaims(c.ns).Patch(ctx, "data", types.MergePatchType, grow, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := resource.MustParse("128Mi")
	testutil.WaitFor(t, 90*time.Second, "the claim's status at 128Mi with no resize pending", func() (bool, string) {
		got, err := c.admin.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		size := got.Status.Capacity[v1.ResourceStorage]
		_, pending := got.Status.AllocatedResourceStatuses[v1.ResourceStorage]
		return size.Cmp(want) == 0 && len(got.Status.Conditions) == 0 && !pending, fmt.Sprintf("%s %+v %v", size.String(), got.Status.Conditions, got.Status.AllocatedResourceStatuses)
	})
	expanded := d.callsOf("NodeExpandVolume", time.Time{})
	if len(expanded) != 1 || expanded[0].Context["requiredBytes"] != fmt.Sprint(want.Value()) {
		t.Fatalf("NodeExpandVolume calls: %+v", expanded)
	}
	c.waitEvent("grower", "FileSystemResizeSuccessful", "MountVolume.NodeExpandVolume succeeded", 10*time.Second)
}

// A driver with VOLUME_MOUNT_GROUP is handed the pod's fsGroup in its stage and publish
// calls and applies it itself; nodelet leaves ownership alone (the CSIDriver's fsGroupPolicy
// None would otherwise keep the volume as it is).
func TestCSIDriverAppliesTheFSGroupItself(t *testing.T) {
	c, d := csiCluster(t, nil, storagev1.CSIDriverSpec{
		AttachRequired: ptr.To(false), FSGroupPolicy: ptr.To(storagev1.NoneFSGroupPolicy),
	}, "--kubeconfig="+adminKubeconfig, "--mount-group")
	c.createClaim("data-owner", c.createStorageClass(d), "16Mi", nil)
	p := podSpec("owner", "touch /data/made-by-pod && exec sleep 3600")
	p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](3000)}
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-owner"}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	c.createPod(p)
	c.waitPodPhase("owner", v1.PodRunning, 2*time.Minute)
	for _, method := range []string{"NodeStageVolume", "NodePublishVolume"} {
		if calls := d.callsOf(method, time.Time{}); len(calls) != 1 || calls[0].MountGroup != "3000" {
			t.Fatalf("%s calls: %+v; want one with volume_mount_group 3000", method, calls)
		}
	}
	dir := c.claimDirs(d, []string{"owner"})[0]
	testutil.WaitFor(t, 20*time.Second, "the pod's file on its volume, in group 3000", func() (bool, string) {
		st, err := os.Stat(filepath.Join(dir, "made-by-pod"))
		if err != nil {
			return false, err.Error()
		}
		return st.Sys().(*syscall.Stat_t).Gid == 3000, fmt.Sprintf("group %d", st.Sys().(*syscall.Stat_t).Gid)
	})
}

// A CSIDriver with tokenRequests gets the pod's service account token for its audience in
// the volume context; with requiresRepublish its mounted volume is published again at the
// pod's syncs.
func TestCSIDriverGetsTokensAndIsRepublished(t *testing.T) {
	c, d := csiCluster(t, []string{"--sync-frequency=5s"}, storagev1.CSIDriverSpec{
		AttachRequired: ptr.To(false), RequiresRepublish: ptr.To(true),
		TokenRequests:        []storagev1.TokenRequest{{Audience: "nodelet-e2e"}},
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral},
	}, "--stage=false")
	p := podSpec("tokens", "exec sleep 3600")
	// The node may only ask for tokens of a service account its pods name (this control
	// plane's admission does not fill in "default").
	p.Spec.ServiceAccountName = "default"
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: d.name}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	c.createPod(p)
	c.waitPodPhase("tokens", v1.PodRunning, 2*time.Minute)
	testutil.WaitFor(t, time.Minute, "the volume published again", func() (bool, string) {
		n := len(d.callsOf("NodePublishVolume", time.Time{}))
		return n >= 2, fmt.Sprintf("%d publish calls", n)
	})
	published := d.callsOf("NodePublishVolume", time.Time{})
	if published[0].Path != published[1].Path {
		t.Fatalf("published at %s, then at %s", published[0].Path, published[1].Path)
	}
	var tokens map[string]struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(published[0].Context["csi.storage.k8s.io/serviceAccount.tokens"]), &tokens); err != nil {
		t.Fatalf("tokens in the volume context: %v (%q)", err, published[0].Context)
	}
	if tokens["nodelet-e2e"].Token == "" {
		t.Fatalf("no token for the driver's audience: %v", tokens)
	}
}

func (c *cluster) createStorageClass(d *csiDriver) string {
	c.t.Helper()
	bind := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "e2e-" + strings.SplitN(d.name, ".", 2)[0]},
		Provisioner:       d.name,
		VolumeBindingMode: &bind, AllowVolumeExpansion: ptr.To(true),
		Parameters: map[string]string{"csi.storage.k8s.io/fstype": "ext4"},
	}
	if _, err := c.admin.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		ctx := context.Background()
		_ = c.admin.StorageV1().StorageClasses().Delete(ctx, sc.Name, metav1.DeleteOptions{})
		// The driver is gone by now: its volumes' PVs would stay Released for ever.
		pvs, _ := c.admin.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		for _, pv := range pvs.Items {
			if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == d.name {
				_ = c.admin.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
			}
		}
	})
	return sc.Name
}

// statefulSet runs replicas that append their name to their volume, as user 1000 with
// fsGroup 2000.
func statefulSet(name, class string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	p := podSpec(name, `echo $(hostname) >> /data/log && exec sleep 3600`)
	p.Spec.NodeName = ""
	p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: name, PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: p.Spec},
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: v1.PersistentVolumeClaimSpec{
					AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &class,
					Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Mi")}},
				},
			}},
		},
	}
}

// claimDirs returns, for each pod, the driver's directory of its claim's volume.
func (c *cluster) claimDirs(d *csiDriver, pods []string) []string {
	c.t.Helper()
	var dirs []string
	for _, p := range pods {
		pvc, err := c.admin.CoreV1().PersistentVolumeClaims(c.ns).Get(context.Background(), "data-"+p, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		dirs = append(dirs, filepath.Join(d.dataDir, pvc.Spec.VolumeName))
	}
	return dirs
}

// waitAttached waits until exactly n VolumeAttachments of the driver exist, attached.
func (c *cluster) waitAttached(d *csiDriver, n int) {
	c.t.Helper()
	testutil.WaitFor(c.t, 2*time.Minute, fmt.Sprintf("%d VolumeAttachments of %s", n, d.name), func() (bool, string) {
		vas, err := c.admin.StorageV1().VolumeAttachments().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		count, attached := 0, 0
		for _, va := range vas.Items {
			if va.Spec.Attacher == d.name {
				count++
				if va.Status.Attached {
					attached++
				}
			}
		}
		return count == n && attached == n, fmt.Sprintf("%d, %d attached", count, attached)
	})
}

// waitEvent waits for an event of the pod with reason whose message contains text.
func (c *cluster) waitEvent(pod, reason, text string, timeout time.Duration) {
	c.t.Helper()
	testutil.WaitFor(c.t, timeout, reason+" event of "+pod, func() (bool, string) {
		evs, err := c.admin.CoreV1().Events(c.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == pod && e.Reason == reason {
				if strings.Contains(e.Message, text) {
					return true, ""
				}
				seen = append(seen, e.Message)
			}
		}
		return false, fmt.Sprint(seen)
	})
}
