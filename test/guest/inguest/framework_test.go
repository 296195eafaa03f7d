//go:build guestvm

package inguest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

const (
	nodeName = "guest-node"
	endpoint = "unix:///run/containerd/containerd.sock"
	// Emulation makes every fork and exec 25-30x slower than on the host.
	podTimeout = 4 * time.Minute
	// The payload's script that (re)configures containerd for a cgroup driver.
	containerdScript = "/payload/containerd.sh"
)

// subject is the kubelet under test: GUEST_SUBJECT names the binary in /usr/local/bin,
// nodelet (the default) or kubelet (upstream v1.33.4, run with the same flags and
// KubeletConfiguration for the lane's side-by-side table).
var subject = envOr("GUEST_SUBJECT", "nodelet")

// nodeletOnly skips a test that asserts what only nodelet does when the subject is the
// upstream kubelet; the reason goes in the side-by-side table.
func nodeletOnly(t *testing.T, why string) {
	t.Helper()
	if subject != "nodelet" {
		t.Skip("nodelet-only: " + why)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

var (
	rt            cri.RuntimeServiceClient
	currentDriver = "systemd" // run.sh starts containerd with runc's SystemdCgroup
)

func TestMain(m *testing.M) {
	if fs := cgroupFS(); fs != "cgroup2fs" {
		fmt.Fprintf(os.Stderr, "/sys/fs/cgroup is %s, want cgroup2fs: not the guest?\n", fs)
		os.Exit(1)
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "dialing containerd:", err)
		os.Exit(1)
	}
	rt = cri.NewRuntimeServiceClient(conn)
	code := m.Run()
	conn.Close()
	os.Exit(code)
}

func cgroupFS() string {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err != nil {
		return err.Error()
	}
	if st.Type == 0x63677270 { // CGROUP2_SUPER_MAGIC
		return "cgroup2fs"
	}
	return fmt.Sprintf("filesystem 0x%x", st.Type)
}

// useDriver points containerd's runc at the cgroup driver (nodelet takes its driver from the
// runtime's RuntimeConfig, as upstream), restarting containerd if it changes.
func useDriver(t *testing.T, driver string) {
	t.Helper()
	if driver == currentDriver {
		return
	}
	out, err := exec.Command("bash", containerdScript, driver).CombinedOutput()
	if err != nil {
		t.Fatalf("switching containerd to %s: %v\n%s", driver, err, out)
	}
	currentDriver = driver
}

// nodelet is one running nodelet, standalone on a manifest directory.
type nodelet struct {
	t         *testing.T
	cmd       *exec.Cmd
	manifests string
	rootDir   string
	logPath   string
	roPort    int
}

// startNodelet runs the subject (nodelet or the upstream kubelet) with the
// KubeletConfiguration fields given (YAML lines) and any extra flags on a fresh manifest
// directory; cleanup removes the manifests, waits for the pods to go and stops it.
func startNodelet(t *testing.T, config string, extraArgs ...string) *nodelet {
	t.Helper()
	base := t.TempDir()
	n := &nodelet{
		t: t, manifests: filepath.Join(base, "manifests"), rootDir: filepath.Join(base, "root"), roPort: testutil.FreePort(t),
		logPath: "/var/tmp/" + subject + "-guest-" + strings.ReplaceAll(t.Name(), "/", "_") + ".log",
	}
	if err := os.MkdirAll(n.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(base, "config.yaml")
	content := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" + config
	if err := os.WriteFile(cfg, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	healthz := testutil.FreePort(t)
	logf, err := os.Create(n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	args := []string{"--config=" + cfg, "--pod-manifest-path=" + n.manifests,
		"--root-dir=" + n.rootDir, "--container-runtime-endpoint=" + endpoint,
		"--hostname-override=" + nodeName, "--address=127.0.0.1",
		fmt.Sprintf("--healthz-port=%d", healthz), fmt.Sprintf("--read-only-port=%d", n.roPort),
		// The read-only port is served beside the API server, which needs these without a
		// control plane.
		fmt.Sprintf("--port=%d", testutil.FreePort(t)), "--authentication-token-webhook=false",
		"--authorization-mode=AlwaysAllow", "--cert-dir=" + filepath.Join(base, "pki"),
		"--file-check-frequency=5s", "-v=2"}
	n.cmd = exec.Command("/usr/local/bin/"+subject, append(args, extraArgs...)...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.cleanup)
	testutil.WaitFor(t, 2*time.Minute, "nodelet's healthz", func() (bool, string) {
		if n.cmd.ProcessState != nil {
			return false, "nodelet exited"
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return n
}

func (n *nodelet) cleanup() {
	entries, _ := os.ReadDir(n.manifests)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(n.manifests, e.Name()))
	}
	testutil.WaitFor(n.t, podTimeout, "all test pods removed from the runtime", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
		if err != nil {
			return false, err.Error()
		}
		if subject != "nodelet" {
			// The upstream kubelet leaves a stopped sandbox to its container GC, a minute
			// later: the harness removes it once stopped rather than wait.
			removeStoppedSandboxes(ctx, resp.Items)
		}
		return len(resp.Items) == 0, fmt.Sprintf("%d sandboxes left", len(resp.Items))
	})
	// The pods' volumes go after their sandboxes: wait, or the root dir cannot be removed.
	testutil.WaitFor(n.t, time.Minute, "the pods' volumes unmounted", func() (bool, string) {
		left := mountsUnder(n.rootDir)
		return len(left) == 0, strings.Join(left, " ")
	})
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	_, _ = n.cmd.Process.Wait()
	if n.t.Failed() {
		b, _ := os.ReadFile(n.logPath)
		n.t.Logf("%s log (last 8000 bytes):\n%s", subject, testutil.Tail(string(b), 8000))
	}
}

// mountsUnder lists the mount points under dir, from /proc/self/mountinfo.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

func removeStoppedSandboxes(ctx context.Context, sandboxes []*cri.PodSandbox) {
	for _, sb := range sandboxes {
		if sb.State == cri.PodSandboxState_SANDBOX_NOTREADY {
			_, _ = rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: sb.Id})
		}
	}
}

func (n *nodelet) removeManifest(name string) {
	n.t.Helper()
	if err := os.Remove(filepath.Join(n.manifests, name+".yaml")); err != nil {
		n.t.Fatal(err)
	}
}

func (n *nodelet) writeManifest(name, content string) {
	n.t.Helper()
	if err := os.WriteFile(filepath.Join(n.manifests, name+".yaml"), []byte(content), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// pods reads nodelet's pods from its read-only port.
func (n *nodelet) pods() (map[string]v1.Pod, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/pods", n.roPort))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	out := map[string]v1.Pod{}
	for _, p := range list.Items {
		out[strings.TrimSuffix(p.Name, "-"+nodeName)] = p
	}
	return out, nil
}

// waitPod waits until the named static pod's status satisfies cond and returns it.
func (n *nodelet) waitPod(name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var got v1.Pod
	testutil.WaitFor(n.t, podTimeout, name+" "+what, func() (bool, string) {
		pods, err := n.pods()
		if err != nil {
			return false, err.Error()
		}
		p, ok := pods[name]
		if !ok {
			return false, "no such pod yet"
		}
		got = p
		return cond(&p), fmt.Sprintf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	return &got
}

func (n *nodelet) waitRunning(name string) *v1.Pod {
	n.t.Helper()
	return n.waitPod(name, "running", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == v1.PodRunning && len(cs) > 0 && cs[0].State.Running != nil
	})
}

// staticPod is a manifest of one busybox container with the given resources block (YAML,
// indented for the container) running script.
func staticPod(name, resources, script, restartPolicy string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nodelet.local/busybox:1.36
    imagePullPolicy: Never
    command: ["sh", "-c", %q]
%s`, name, restartPolicy, script, resources)
}

// readCgroup reads one file of a cgroup under /sys/fs/cgroup, trimmed.
func readCgroup(t *testing.T, cgroup, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", cgroup, file))
	if err != nil {
		t.Fatalf("reading %s of %s: %v", file, cgroup, err)
	}
	return strings.TrimSpace(string(b))
}

// expectCgroupFiles checks each file of cgroup holds the wanted value.
func expectCgroupFiles(t *testing.T, cgroup string, want map[string]string) {
	t.Helper()
	for file, w := range want {
		if got := readCgroup(t, cgroup, file); got != w {
			t.Errorf("%s/%s = %q, want %q", cgroup, file, got, w)
		}
	}
}

// containerCgroup is the cgroup the pod's container "main" runs in, from its process's
// /proc/PID/cgroup (the line "0::/path" of cgroup v2).
func containerCgroup(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	pid := containerPID(t, pod)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	t.Fatalf("no cgroup v2 line in /proc/%d/cgroup: %q", pid, b)
	return ""
}

// containerPID is the guest's pid of the first process of the pod's first container.
func containerPID(t *testing.T, pod *v1.Pod) int {
	t.Helper()
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatalf("ContainerStatus %s: %v", id, err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("no pid in the container's verbose info (%v): %s", err, resp.Info["info"])
	}
	return info.Pid
}

// systemdShow reads unit properties with `systemctl show`, as systemd itself holds them.
func systemdShow(t *testing.T, unit string, props ...string) map[string]string {
	t.Helper()
	out, err := exec.Command("systemctl", "show", unit, "--property="+strings.Join(props, ",")).Output()
	if err != nil {
		t.Fatalf("systemctl show %s: %v", unit, err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	return got
}

func execOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// hasPositive says whether the flat-keyed file content (memory.events) has key above zero.
func hasPositive(content, key string) bool {
	for _, line := range strings.Split(content, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			return v != "0"
		}
	}
	return false
}

// containerLog is the end of the CRI log of the pod's first container, for failure messages.
func containerLog(pod *v1.Pod) string {
	if len(pod.Status.ContainerStatuses) == 0 {
		return "(no container)"
	}
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return err.Error()
	}
	b, err := os.ReadFile(resp.Status.LogPath)
	if err != nil {
		return err.Error()
	}
	return testutil.Tail(string(b), 2000)
}

func (n *nodelet) log() string {
	b, _ := os.ReadFile(n.logPath)
	return string(b)
}
