//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil"
	"github.com/nodelet/nodelet/internal/volumes/mount"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

var (
	csiDriverOnce sync.Once
	csiDriverBin  string
	csiDriverErr  error
)

// csiDriver is test/csidriver running against a nodelet's root dir, as its own process.
type csiDriver struct {
	t       *testing.T
	name    string
	dataDir string
	calls   string
	args    []string
	cmd     *exec.Cmd
}

// startCSIDriver builds the test CSI driver (once per run) and starts it with its own data
// dir and a driver name of its own, so tests do not share CSIDriver objects.
func startCSIDriver(t *testing.T, rootDir string, extraArgs ...string) *csiDriver {
	t.Helper()
	csiDriverOnce.Do(func() {
		csiDriverBin = filepath.Join(os.TempDir(), "nodelet-e2e-csidriver")
		out, err := exec.Command("go", "build", "-o", csiDriverBin, "../csidriver").CombinedOutput()
		if err != nil {
			csiDriverErr = err
			csiDriverBin = string(out)
		}
	})
	if csiDriverErr != nil {
		t.Fatalf("building test/csidriver: %v\n%s", csiDriverErr, csiDriverBin)
	}
	base := t.TempDir()
	d := &csiDriver{
		t: t, name: "hostpath-" + rand.String(5) + ".csi.nodelet.test",
		dataDir: filepath.Join(base, "data"), calls: filepath.Join(base, "calls.jsonl"),
	}
	d.args = append([]string{
		"--name=" + d.name, "--kubelet-dir=" + rootDir, "--data-dir=" + d.dataDir,
		"--node-id=" + nodeName, "--calls=" + d.calls, "-v=2",
	}, extraArgs...)
	d.start()
	t.Cleanup(d.stop)
	return d
}

func (d *csiDriver) start() {
	d.t.Helper()
	logf, err := os.OpenFile(d.calls+".log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	d.cmd = exec.Command(csiDriverBin, d.args...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
}

// stop ends the driver; it removes its registration socket on the way out.
func (d *csiDriver) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_, _ = d.cmd.Process.Wait()
	d.cmd = nil
	if d.t.Failed() {
		logs, _ := os.ReadFile(d.calls + ".log")
		d.t.Logf("CSI driver log (last 3000 bytes):\n%s", tail(string(logs), 3000))
	}
}

// csiCall is one node call the driver logged.
type csiCall struct {
	Time     time.Time         `json:"time"`
	Method   string            `json:"method"`
	VolumeID string            `json:"volumeID"`
	Path     string            `json:"path"`
	Context  map[string]string `json:"context"`
	// MountGroup is the volume_mount_group of a stage or publish call.
	MountGroup string `json:"mountGroup"`
	// ListedInUse: at a stage or publish call, whether the Node listed the volume in
	// status.volumesInUse (nil when the driver has no API access or could not read it).
	ListedInUse *bool `json:"listedInUse"`
}

// callsOf returns the logged calls of method made after since.
func (d *csiDriver) callsOf(method string, since time.Time) []csiCall {
	f, err := os.Open(d.calls)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []csiCall
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c csiCall
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Method == method && !c.Time.Before(since) {
			out = append(out, c)
		}
	}
	return out
}

// joinClusterForCSI is joinCluster with a root dir short enough for the driver's sockets below
// it (a unix socket path has at most 107 bytes; the test's temporary directories are long).
func joinClusterForCSI(t *testing.T, extraArgs ...string) *cluster {
	t.Helper()
	root, err := os.MkdirTemp("/tmp", "nlcsi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) }) // runs last, once everything is unmounted
	c := joinCluster(t, append(extraArgs, "--root-dir="+root)...)
	c.rootDir = root
	return c
}

// csiCluster joins the cluster (root dir short enough for sockets), starts the test driver
// with driverArgs and its CSIDriver from spec, and waits until nodelet has registered it.
// Cleanup drains the test's pods and mounts before the driver stops.
func csiCluster(t *testing.T, joinArgs []string, spec storagev1.CSIDriverSpec, driverArgs ...string) (*cluster, *csiDriver) {
	t.Helper()
	c := joinClusterForCSI(t, joinArgs...)
	c.waitReady(t)
	d := startCSIDriver(t, c.rootDir, driverArgs...)
	c.createCSIDriverSpec(d, spec)
	c.waitDriverRegistered(d)
	t.Cleanup(func() { c.drainCSI(c.rootDir) })
	return c, d
}

// createClaim makes claim name of class asking for size; mode nil is Filesystem.
func (c *cluster) createClaim(name, class, size string, mode *v1.PersistentVolumeMode) {
	c.t.Helper()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &class, VolumeMode: mode,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if _, err := c.admin.CoreV1().PersistentVolumeClaims(c.ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// createCSIDriverSpec makes the driver's CSIDriver from spec, with podInfoOnMount and the
// File fsGroupPolicy; removed at cleanup.
func (c *cluster) createCSIDriverSpec(d *csiDriver, spec storagev1.CSIDriverSpec) {
	c.t.Helper()
	spec.PodInfoOnMount, spec.FSGroupPolicy = ptr.To(true), ptr.To(storagev1.FileFSGroupPolicy)
	obj := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: d.name}, Spec: spec}
	if _, err := c.admin.StorageV1().CSIDrivers().Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		_ = c.admin.StorageV1().CSIDrivers().Delete(context.Background(), d.name, metav1.DeleteOptions{})
	})
}

// waitDriverRegistered waits until the node's CSINode lists the driver with its node ID.
func (c *cluster) waitDriverRegistered(d *csiDriver) {
	c.t.Helper()
	testutil.WaitFor(c.t, 30*time.Second, "CSINode lists "+d.name, func() (bool, string) {
		cn, err := c.admin.StorageV1().CSINodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, drv := range cn.Spec.Drivers {
			if drv.Name == d.name {
				return drv.NodeID == nodeName, "node ID " + drv.NodeID
			}
		}
		return false, "not listed"
	})
}

// csiMounts lists the mounts below the nodelet's root dir: published targets and staging
// paths.
func csiMounts(t *testing.T, rootDir string) []string {
	t.Helper()
	points, err := mount.ReadPoints(mount.Mountinfo)
	if err != nil {
		t.Fatal(err)
	}
	return mount.Under(points, rootDir)
}

// drainCSI deletes the test's pods and waits until nothing is mounted below the root dir,
// so the temporary directories can go; what is still mounted then is detached.
func (c *cluster) drainCSI(rootDir string) {
	ctx := context.Background()
	_ = c.admin.CoreV1().Pods(c.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && len(csiMounts(c.t, rootDir)) > 0 {
		time.Sleep(time.Second)
	}
	for _, p := range csiMounts(c.t, rootDir) {
		c.t.Logf("still mounted at the end, detaching: %s", p)
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

func targetMounts(points []string) []string {
	var out []string
	for _, p := range points {
		if strings.Contains(p, "/volumes/kubernetes.io~csi/") && strings.HasSuffix(p, "/mount") {
			out = append(out, p)
		}
	}
	return out
}

func stagingMounts(points []string) []string {
	var out []string
	for _, p := range points {
		if strings.Contains(p, "/plugins/kubernetes.io/csi/") && strings.HasSuffix(p, "/globalmount") {
			out = append(out, p)
		}
	}
	return out
}
