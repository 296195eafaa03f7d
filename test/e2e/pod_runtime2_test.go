//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeFeatures is what the runtime under test says its default handler can do.
type runtimeFeatures struct {
	userNamespaces, recursiveReadOnly, strictGroups bool
}

func (f runtimeFeatures) any() bool { return f.userNamespaces || f.recursiveReadOnly || f.strictGroups }

func (f runtimeFeatures) all() bool { return f.userNamespaces && f.recursiveReadOnly && f.strictGroups }

// criStatus is the runtime's CRI Status answer.
func criStatus(t *testing.T) *cri.StatusResponse {
	t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	st, err := rt.Status(ctx, &cri.StatusRequest{})
	if err != nil {
		t.Fatalf("CRI Status: %v", err)
	}
	return st
}

// readRuntimeFeatures reads the features of the runc handler (containerd 2 names the default
// handler "" and "runc"; containerd 1.6 reports no handlers at all).
func readRuntimeFeatures(t *testing.T) runtimeFeatures {
	t.Helper()
	st := criStatus(t)
	f := runtimeFeatures{strictGroups: st.GetFeatures().GetSupplementalGroupsPolicy()}
	for _, h := range st.RuntimeHandlers {
		if h.Name == "runc" {
			f.userNamespaces = h.GetFeatures().GetUserNamespaces()
			f.recursiveReadOnly = h.GetFeatures().GetRecursiveReadOnlyMounts()
		}
	}
	return f
}

// On containerd 2 and runc 1.3 (hack/containerd2.sh, `make e2e-containerd2`) the pod fields
// containerd 1.6 lacks run, as upstream runs them:
//   - hostUsers: false runs in a user namespace of its own: /proc/self/uid_map maps the
//     container's root to a 65536-ID range that is not the host's;
//   - recursiveReadOnly: Enabled makes a submount of the volume read-only too (a write to it
//     fails with EROFS, where a plain read-only mount leaves it writable), and the status says so;
//   - supplementalGroupsPolicy: Strict runs with exactly the pod's groups, where Merge adds the
//     group the image's /etc/group gives its user, in /proc and in the status's user;
//   - the Node reports the runtime's handlers and features as CRI Status gives them.
//
// Skipped on a runtime that reports none of these (TestRuntimeGatedPodFieldsOnContainerd16
// covers that one).
func TestRuntimeGatedPodFieldsOnContainerd2(t *testing.T) {
	f := readRuntimeFeatures(t)
	if !f.any() {
		t.Skipf("the runtime at %s has no user namespaces, recursive read-only mounts or strict supplemental groups", endpoint)
	}
	if !f.all() {
		t.Fatalf("the runtime at %s reports only %+v", endpoint, f)
	}
	host := submountedDir(t)
	c := joinCluster(t)
	c.waitReady(t)

	userns := podSpec("userns", "exec sleep 3600")
	userns.Spec.HostUsers = ptr.To(false)
	c.createPod(userns)

	rro := podSpec("rro", "exec sleep 3600")
	rro.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}}}
	rro.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true,
		RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyEnabled)}}
	c.createPod(rro)

	// The groups image's /etc/group puts its user 1000 in group 50000: Merge adds that group,
	// Strict keeps to the pod's.
	for _, policy := range []v1.SupplementalGroupsPolicy{v1.SupplementalGroupsPolicyStrict, v1.SupplementalGroupsPolicyMerge} {
		p := podSpec(strings.ToLower(string(policy)), "exec sleep 3600")
		p.Spec.Containers[0].Image = groupsImage
		p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000),
			SupplementalGroups: []int64{4000}, SupplementalGroupsPolicy: ptr.To(policy)}
		c.createPod(p)
	}

	for _, name := range []string{"userns", "rro", "strict", "merge"} {
		c.waitPodPhase(name, v1.PodRunning, 60*time.Second)
	}
	checkNodeRuntimeFeatures(t, c)

	uidMap := strings.Fields(execOut(t, c.mainContainer("userns"), "cat", "/proc/self/uid_map"))
	if len(uidMap) != 3 || uidMap[0] != "0" || uidMap[1] == "0" || uidMap[2] != "65536" {
		t.Errorf("userns pod's uid_map %q, want 0 <host ID> 65536 with a host ID other than 0", uidMap)
	} else if first, _ := strconv.Atoi(uidMap[1]); first%65536 != 0 {
		t.Errorf("userns pod's IDs start at %d, want a multiple of 65536", first)
	}

	resp := execSync(t, c.mainContainer("rro"), "touch", "/data/sub/probe")
	if out := string(resp.Stdout) + string(resp.Stderr); resp.ExitCode == 0 || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a write under the recursively read-only volume's submount gave %q, want EROFS", out)
	}
	if p, _ := c.getPod("rro"); len(p.Status.ContainerStatuses) != 1 || len(p.Status.ContainerStatuses[0].VolumeMounts) != 1 ||
		ptr.Deref(p.Status.ContainerStatuses[0].VolumeMounts[0].RecursiveReadOnly, "") != v1.RecursiveReadOnlyEnabled {
		t.Errorf("rro pod's volumeMounts status %+v, want recursiveReadOnly Enabled", p.Status.ContainerStatuses)
	}

	for name, want := range map[string][]int64{"strict": {3000, 4000}, "merge": {3000, 4000, 50000}} {
		checkGroups(t, c, name, want)
	}
}

// groupsImage is hack/images.sh's busybox root whose /etc/group puts user 1000 in group 50000.
const groupsImage = "nodelet.local/groups:v1"

// checkGroups checks the groups the pod's container runs with, in /proc and in its status's
// user (which the runtime reports).
func checkGroups(t *testing.T, c *cluster, pod string, want []int64) {
	t.Helper()
	var words []string
	for _, g := range want {
		words = append(words, strconv.FormatInt(g, 10))
	}
	groups := statusLine(execOut(t, c.mainContainer(pod), "cat", "/proc/self/status"), "Groups:")
	t.Logf("%s pod runs with Groups %q", pod, groups)
	if groups != strings.Join(words, " ") {
		t.Errorf("%s pod's Groups %q, want %v", pod, groups, want)
	}
	p, err := c.getPod(pod)
	if err != nil || len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("%s pod: %v", pod, err)
	}
	wantUser := &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: want}}
	if got := p.Status.ContainerStatuses[0].User; !reflect.DeepEqual(got, wantUser) {
		t.Errorf("%s pod's status user %+v, want %+v", pod, got.Linux, wantUser.Linux)
	}
}

// checkNodeRuntimeFeatures compares the Node object's status.features and runtimeHandlers with
// what CRI Status reports, as upstream copies them: every handler with its two features.
func checkNodeRuntimeFeatures(t *testing.T, c *cluster) {
	t.Helper()
	st := criStatus(t)
	node := c.node()
	if f := node.Status.Features; f == nil || !ptr.Deref(f.SupplementalGroupsPolicy, false) {
		t.Errorf("node status.features %+v, want supplementalGroupsPolicy true", f)
	}
	var want []v1.NodeRuntimeHandler
	for _, h := range st.RuntimeHandlers {
		want = append(want, v1.NodeRuntimeHandler{Name: h.Name, Features: &v1.NodeRuntimeHandlerFeatures{
			RecursiveReadOnlyMounts: ptr.To(h.GetFeatures().GetRecursiveReadOnlyMounts()),
			UserNamespaces:          ptr.To(h.GetFeatures().GetUserNamespaces()),
		}})
	}
	if !reflect.DeepEqual(node.Status.RuntimeHandlers, want) {
		t.Errorf("node status.runtimeHandlers %s, want %s", handlersString(node.Status.RuntimeHandlers), handlersString(want))
	}
	for _, h := range node.Status.RuntimeHandlers {
		if h.Name == "runc" && (!ptr.Deref(h.Features.RecursiveReadOnlyMounts, false) || !ptr.Deref(h.Features.UserNamespaces, false)) {
			t.Errorf("node reports runc without recursive read-only mounts or user namespaces: %s", handlersString(node.Status.RuntimeHandlers))
		}
	}
}

func handlersString(hs []v1.NodeRuntimeHandler) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("%q{rro:%v userns:%v}", h.Name,
			ptr.Deref(h.Features.RecursiveReadOnlyMounts, false), ptr.Deref(h.Features.UserNamespaces, false)))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// submountedDir is a host directory with a tmpfs mounted at sub/, unmounted when the test ends
// (after the cluster's cleanup, registered later, has removed the pods).
func submountedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", sub, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(sub, syscall.MNT_DETACH) })
	return dir
}

// mainContainer is the CRI ID of the pod's running container "main".
func (c *cluster) mainContainer(pod string) string {
	c.t.Helper()
	for _, ctr := range c.podContainers(pod) {
		if ctr.Metadata.Name == "main" && ctr.State == cri.ContainerState_CONTAINER_RUNNING {
			return ctr.Id
		}
	}
	c.t.Fatalf("pod %s has no running container main", pod)
	return ""
}

// execSync runs cmd in the container (by CRI ID), whatever its exit.
func execSync(t *testing.T, id string, cmd ...string) *cri.ExecSyncResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 5})
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	return resp
}

// statusLine is the value of the /proc/<pid>/status line that starts with key.
func statusLine(status, key string) string {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
