//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The upstream kubelet the local control plane's build makes (test/harness), v1.33.4.
var upstreamKubeletBin = envOr("KUBELET_BIN", "../../_output/cp/bin/kubelet")

// Static pods for the handover: an init container seeding an emptyDir the app then reads, and
// two containers of which one crashes once (so its restart count is 1 when handed over). Each
// start appends a line to its emptyDir, so a restart shows in the volume as well as the runtime.
const handoverInitPod = `apiVersion: v1
kind: Pod
metadata:
  name: hand-init
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - name: seed
    image: ` + busybox + `
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo seeded > /data/seed"]
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: app
    image: ` + busybox + `
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo start >> /data/starts; exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    emptyDir: {}
`

const handoverTwoPod = `apiVersion: v1
kind: Pod
metadata:
  name: hand-two
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: steady
    image: ` + busybox + `
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo start >> /data/steady; exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  - name: flaky
    image: ` + busybox + `
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo start >> /data/flaky; [ -f /data/crashed ] || { touch /data/crashed; exit 1; }; exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    emptyDir: {}
`

// TestHandoverWithUpstreamKubeletRestartsNothing runs static pods under the upstream kubelet,
// stops it and starts nodelet on the same root directory and manifests, then hands back to the
// upstream kubelet, then restarts nodelet: at every step the same sandboxes and containers run
// (no new instance, same IDs), the emptyDir keeps its content, and a container that crashes
// after the handover counts its restarts on from the upstream kubelet's count.
func TestHandoverWithUpstreamKubeletRestartsNothing(t *testing.T) {
	n, k := handoverPair(t, "--file-check-frequency=5s")
	if left := len(sandboxes(t, "hand-init")) + len(sandboxes(t, "hand-two")); left > 0 {
		t.Fatalf("%d sandboxes of an earlier run are left on the runtime", left)
	}
	// Whatever happens, the upstream kubelet stops first; then nodelet removes the pods.
	t.Cleanup(n.cleanup)
	t.Cleanup(k.stop)

	k.start()
	n.writeManifest("init.yaml", handoverInitPod)
	n.writeManifest("two.yaml", handoverTwoPod)
	waitRunning(t, "hand-init", "app", 90*time.Second)
	waitRunning(t, "hand-two", "steady", 90*time.Second)
	testutil.WaitFor(t, 90*time.Second, "flaky restarted once by the upstream kubelet", func() (bool, string) {
		c := runningContainer(t, "hand-two", "flaky")
		return c != nil && c.Metadata.Attempt == 1, fmt.Sprintf("%d instances", len(containers(t, "hand-two", "flaky")))
	})
	before := takeSnapshot(t)
	k.stopKeepingPods()

	n.start()
	holdsFor(t, 30*time.Second, "nodelet adopts the upstream kubelet's pods", before)
	checkVolumes(t)

	n.stop(syscall.SIGTERM)
	k.start()
	holdsFor(t, 30*time.Second, "the upstream kubelet adopts them back", before)
	k.stopKeepingPods()

	n.start()
	holdsFor(t, 20*time.Second, "nodelet adopts them again", before)
	n.stop(syscall.SIGTERM)
	n.start()
	holdsFor(t, 20*time.Second, "a restarted nodelet keeps them", before)
	checkVolumes(t)

	// A crash now is the flaky container's second restart, whoever counted the first.
	flaky := runningContainer(t, "hand-two", "flaky")
	ctx, cancel := criCtx()
	defer cancel()
	if _, err := rt.StopContainer(ctx, &cri.StopContainerRequest{ContainerId: flaky.Id, Timeout: 0}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 60*time.Second, "flaky restarted by nodelet as its attempt 2", func() (bool, string) {
		c := runningContainer(t, "hand-two", "flaky")
		if c == nil {
			return false, "not running"
		}
		return c.Metadata.Attempt == 2 && c.Annotations["io.kubernetes.container.restartCount"] == "2",
			fmt.Sprintf("attempt %d, restartCount annotation %q", c.Metadata.Attempt, c.Annotations["io.kubernetes.container.restartCount"])
	})
}

// handoverPair makes (without starting them) a nodelet and an upstream kubelet sharing one
// root directory and one manifest directory, nodelet with extraArgs.
func handoverPair(t *testing.T, extraArgs ...string) (*nodelet, *upstreamKubelet) {
	base := t.TempDir()
	manifests, rootDir := filepath.Join(base, "manifests"), filepath.Join(base, "root")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	// The upstream kubelet bind-mounts its root directory onto itself (to make it shared):
	// undone last, once no kubelet runs.
	t.Cleanup(func() { _ = syscall.Unmount(rootDir, syscall.MNT_DETACH) })
	n := &nodelet{t: t, manifests: manifests, rootDir: rootDir, logPath: filepath.Join(base, "nodelet.log"), healthzPort: freePort(t)}
	n.args = append([]string{
		"--pod-manifest-path=" + manifests, "--root-dir=" + rootDir, "--container-runtime-endpoint=" + endpoint,
		"--hostname-override=" + nodeName, fmt.Sprintf("--healthz-port=%d", n.healthzPort),
		"-v=2", "--fail-swap-on=false", "--cgroup-driver=cgroupfs",
	}, extraArgs...)
	return n, newUpstreamKubelet(t, base, manifests, rootDir)
}

// snapshot is every sandbox and container of the test's pods, by ID, with its state.
type snapshot map[string]string

func takeSnapshot(t *testing.T) snapshot {
	s := snapshot{}
	for _, pod := range []string{"hand-init", "hand-two"} {
		for _, sb := range sandboxes(t, pod) {
			state := sb.State.String()
			if sb.State != cri.PodSandboxState_SANDBOX_READY {
				state = "not running"
			}
			s["sandbox "+pod+" "+sb.Id] = state
		}
		for _, c := range containers(t, pod, "") {
			state := c.State.String()
			if c.State != cri.ContainerState_CONTAINER_RUNNING {
				state = "not running" // an exited instance may be garbage collected
			}
			s[fmt.Sprintf("container %s/%s#%d %s", pod, c.Metadata.Name, c.Metadata.Attempt, c.Id)] = state
		}
	}
	return s
}

// running keeps only what runs: what a handover must keep as it is.
func (s snapshot) running() snapshot {
	out := snapshot{}
	for k, v := range s {
		if v != "not running" {
			out[k] = v
		}
	}
	return out
}

// holdsFor checks for d that what ran before still runs and nothing was added.
func holdsFor(t *testing.T, d time.Duration, what string, before snapshot) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(2 * time.Second) {
		now := takeSnapshot(t)
		for k := range now {
			if _, ok := before[k]; !ok {
				t.Fatalf("%s: %s is new\nbefore: %v\nnow: %v", what, k, sortedEntries(before), sortedEntries(now))
			}
		}
		if !reflect.DeepEqual(now.running(), before.running()) {
			t.Fatalf("%s: running set changed\nbefore: %v\nnow: %v", what, sortedEntries(before.running()), sortedEntries(now.running()))
		}
	}
}

func sortedEntries(s snapshot) []string {
	var out []string
	for k, v := range s {
		out = append(out, k+" "+v)
	}
	slices.Sort(out)
	return out
}

// checkVolumes reads the emptyDirs from inside the containers: seeded once, each container
// started once (flaky twice: its crash under the upstream kubelet).
func checkVolumes(t *testing.T) {
	t.Helper()
	for _, c := range []struct{ pod, ctr, cmd, want string }{
		{"hand-init", "app", "cat /data/seed /data/starts", "seeded\nstart\n"},
		{"hand-two", "steady", "cat /data/steady /data/flaky", "start\nstart\nstart\n"},
	} {
		id := runningContainer(t, c.pod, c.ctr)
		if id == nil {
			t.Fatalf("%s/%s not running", c.pod, c.ctr)
		}
		ctx, cancel := criCtx()
		resp, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id.Id, Cmd: []string{"sh", "-c", c.cmd}, Timeout: 5})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := string(resp.Stdout); got != c.want {
			t.Errorf("%s/%s volume holds %q, want %q", c.pod, c.ctr, got, c.want)
		}
	}
}

// upstreamKubelet is the upstream kubelet run standalone (no API server) on a root directory.
type upstreamKubelet struct {
	t             *testing.T
	bin, config   string
	rootDir       string
	logPath       string
	healthzPort   int
	cmd           *exec.Cmd
	extraArgs     []string
	pluginsBefore map[string]bool
	savedTunables map[string]string
}

// kernelTunables are the sysctls the upstream kubelet rewrites at start-up; put back at the end.
var kernelTunables = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// devicePluginsDir is where the upstream kubelet serves device plugins whatever its root dir.
const devicePluginsDir = "/var/lib/kubelet/device-plugins"

func newUpstreamKubelet(t *testing.T, base, manifests, rootDir string) *upstreamKubelet {
	bin, err := filepath.Abs(upstreamKubeletBin)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		t.Fatalf("upstream kubelet binary: %v (make control-plane builds it; KUBELET_BIN names another)", err)
	}
	k := &upstreamKubelet{t: t, bin: bin, rootDir: rootDir, logPath: filepath.Join(base, "kubelet.log"),
		config: filepath.Join(base, "kubelet-config.yaml"), healthzPort: freePort(t),
		pluginsBefore: map[string]bool{}, savedTunables: map[string]string{}}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: %s
staticPodPath: %s
fileCheckFrequency: 5s
cgroupDriver: cgroupfs
failSwapOn: false
enableServer: false
readOnlyPort: 0
authentication: {webhook: {enabled: false}, anonymous: {enabled: true}}
authorization: {mode: AlwaysAllow}
healthzBindAddress: 127.0.0.1
healthzPort: %d
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 1Mi, nodefs.available: 1%%, imagefs.available: 1%%}
`, endpoint, manifests, k.healthzPort)
	if err := os.WriteFile(k.config, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(devicePluginsDir)
	for _, e := range entries {
		k.pluginsBefore[e.Name()] = true
	}
	for _, tun := range kernelTunables {
		if b, err := os.ReadFile("/proc/sys/" + tun); err == nil {
			k.savedTunables[tun] = strings.TrimSpace(string(b))
		}
	}
	return k
}

func (k *upstreamKubelet) start() {
	k.t.Helper()
	logf, err := os.OpenFile(k.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		k.t.Fatal(err)
	}
	defer logf.Close()
	k.cmd = exec.Command(k.bin, append([]string{"--config=" + k.config, "--root-dir=" + k.rootDir,
		"--hostname-override=" + nodeName, "-v=2"}, k.extraArgs...)...)
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	if err := k.cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	if err := pollHTTPOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", k.healthzPort), 60*time.Second); err != nil {
		k.stopKeepingPods()
		b, _ := os.ReadFile(k.logPath)
		k.t.Fatalf("upstream kubelet never became healthy: %v\n%s", err, tail(string(b), 6000))
	}
}

// stopKeepingPods ends the kubelet; as any kubelet, it leaves its pods running.
func (k *upstreamKubelet) stopKeepingPods() { k.end(syscall.SIGTERM) }

// end stops the kubelet with sig (SIGKILL: a crash) and waits for it; the pods keep running.
func (k *upstreamKubelet) end(sig syscall.Signal) {
	if k.cmd == nil {
		return
	}
	_ = k.cmd.Process.Signal(sig)
	_, _ = k.cmd.Process.Wait()
	k.cmd = nil
}

// stop is the test's cleanup: the kubelet stopped, the files it left outside its root
// directory removed and the kernel tunables it rewrote put back.
func (k *upstreamKubelet) stop() {
	k.stopKeepingPods()
	entries, _ := os.ReadDir(devicePluginsDir)
	for _, e := range entries {
		if !k.pluginsBefore[e.Name()] {
			_ = os.RemoveAll(filepath.Join(devicePluginsDir, e.Name()))
		}
	}
	for tun, v := range k.savedTunables {
		_ = os.WriteFile("/proc/sys/"+tun, []byte(v), 0o644)
	}
	if k.t.Failed() {
		b, _ := os.ReadFile(k.logPath)
		k.t.Logf("upstream kubelet log (last 6000 bytes):\n%s", tail(string(b), 6000))
	}
}
