//go:build guestvm

package inguest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A kubeadm node as the kubelet and kubeadm packages and `kubeadm join` leave it: the upstream
// kubelet's binary and unit, kubeadm's drop-in, the flags file kubeadm writes and the
// operator's /etc/default/kubelet.
const (
	kubeletBin     = "/usr/bin/kubelet"
	kubeletUnit    = "/usr/lib/systemd/system/kubelet.service"
	kubeadmDropIn  = "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"
	kubeadmFlags   = "/var/lib/kubelet/kubeadm-flags.env"
	kubeadmConfig  = "/var/lib/kubelet/config.yaml"
	defaultKubelet = "/etc/default/kubelet"
	nodeKubeconfig = "/etc/kubernetes/kubelet.conf"
	staticPodDir   = "/etc/kubernetes/manifests"
	// The test's own drop-in: a short watchdog, so a few periods pass within the test.
	watchdogDropIn = "/etc/systemd/system/nodelet.service.d/50-watchdog.conf"
	watchdogSec    = 10 * time.Second
	// The payload's packages (hack/guest.sh): the first installed, the second its upgrade.
	debFirst, debNext = "/payload/deb/nodelet_0.1.0~guest.1_amd64.deb", "/payload/deb/nodelet_0.1.0~guest.2_amd64.deb"
)

// The kubelet package's unit and kubeadm's drop-in, directive for directive as their packaging
// installs them: what nodelet's unit has to work with unchanged.
const (
	upstreamUnit = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`
	upstreamDropIn = `[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`
	// kubeadm's KubeletConfiguration, less what needs a controller manager (certificate
	// rotation) or cluster DNS.
	kubeadmKubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: /payload/cp/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: systemd
staticPodPath: /etc/kubernetes/manifests
fileCheckFrequency: 5s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
`
	kubeadmFlagsEnv = `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --hostname-override=guest-node --node-ip=10.99.0.2"
`
	extraArgs = `KUBELET_EXTRA_ARGS="--v=2"
`
)

// TestPackageSwitchFromKubeadmKubeletRestartsNothing installs nodelet's Debian package on a
// node whose upstream kubelet runs static pods under the kubelet package's unit and kubeadm's
// drop-in, and walks docs/install.md: install beside it (the kubelet runs on), switch with
// `nodelet-switch to-nodelet` (nodelet runs as kubelet.service with kubeadm's flags, ready
// and feeding the watchdog; a frozen nodelet is restarted by it), switch back, switch again
// and upgrade to a newer package, then remove it. After every step the same containers run,
// none restarted.
func TestPackageSwitchFromKubeadmKubeletRestartsNothing(t *testing.T) {
	nodeletOnly(t, "installs nodelet's package and switches the upstream kubelet's unit to it")
	useDriver(t, "systemd")
	_, kubeconfig := startControlPlane(t)
	kubeadmNode(t, kubeconfig)
	writeHandoverPods(t)
	before := waitHandoverPods(t)
	healthy(t, "the upstream kubelet")

	step(t, "install", func() {
		pid := systemdShow(t, "kubelet.service", "MainPID")["MainPID"]
		mustRun(t, "dpkg", "-i", debFirst)
		expectUnit(t, "kubelet.service", map[string]string{"Id": "kubelet.service", "ActiveState": "active", "MainPID": pid})
		expectUnit(t, "nodelet.service", map[string]string{"ActiveState": "inactive", "UnitFileState": "disabled"})
	})
	if err := os.MkdirAll(filepath.Dir(watchdogDropIn), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, watchdogDropIn, fmt.Sprintf("[Service]\nWatchdogSec=%ds\n", int(watchdogSec.Seconds())))
	mustRun(t, "systemctl", "daemon-reload")

	step(t, "switch to nodelet", func() {
		mustRun(t, "nodelet-switch", "to-nodelet")
		expectNodeletIsTheKubelet(t)
		expectSamePods(t, before)
	})
	step(t, "watchdog", func() { expectWatchdog(t, before) })
	step(t, "switch back", func() {
		mustRun(t, "nodelet-switch", "to-kubelet")
		expectUnit(t, "kubelet.service", map[string]string{"Id": "kubelet.service", "ActiveState": "active"})
		if got := systemdShow(t, "kubelet.service", "FragmentPath")["FragmentPath"]; !strings.HasSuffix(got, "/lib/systemd/system/kubelet.service") {
			t.Errorf("kubelet.service is loaded from %s, want the kubelet package's %s", got, kubeletUnit)
		}
		expectUnit(t, "nodelet.service", map[string]string{"ActiveState": "inactive", "UnitFileState": "disabled"})
		expectExe(t, "kubelet.service", kubeletBin)
		healthy(t, "the upstream kubelet")
		expectSamePods(t, before)
	})
	step(t, "upgrade", func() {
		mustRun(t, "nodelet-switch", "to-nodelet")
		healthy(t, "nodelet")
		pid := systemdShow(t, "nodelet.service", "MainPID")["MainPID"]
		mustRun(t, "dpkg", "-i", debNext)
		got := systemdShow(t, "nodelet.service", "ActiveState", "MainPID")
		if got["ActiveState"] != "active" || got["MainPID"] == pid {
			t.Errorf("after the upgrade nodelet.service is %v; want active on a new process (was %s)", got, pid)
		}
		expectExe(t, "nodelet.service", "/usr/bin/nodelet")
		// /usr/bin: the payload's own nodelet is first on PATH, in /usr/local/bin.
		if out := mustRun(t, "/usr/bin/nodelet", "version"); !strings.Contains(out, "v0.1.0-guest.2") {
			t.Errorf("nodelet version after the upgrade: %s; want the second package's v0.1.0-guest.2", out)
		}
		healthy(t, "the upgraded nodelet")
		expectSamePods(t, before)
	})
	step(t, "remove", func() {
		mustRun(t, "dpkg", "-r", "nodelet")
		expectUnit(t, "kubelet.service", map[string]string{"Id": "kubelet.service", "ActiveState": "active"})
		expectExe(t, "kubelet.service", kubeletBin)
		healthy(t, "the upstream kubelet")
		expectSamePods(t, before)
	})
}

// step runs one step of the walk and logs how long it took; a failed step ends the test.
func step(t *testing.T, name string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	t.Logf("step %q took %v", name, time.Since(start).Round(time.Second))
	if t.Failed() {
		t.FailNow()
	}
}

// kubeadmNode lays the kubeadm node's files out and starts the upstream kubelet as
// kubelet.service. Cleanup removes the pods through whichever kubelet runs, then everything.
func kubeadmNode(t *testing.T, kubeconfig string) {
	t.Helper()
	for _, dir := range []string{filepath.Dir(kubeadmDropIn), "/var/lib/kubelet", staticPodDir, "/etc/default"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "install", "-m", "0755", "/usr/local/bin/kubelet", kubeletBin)
	kc, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{
		kubeletUnit: upstreamUnit, kubeadmDropIn: upstreamDropIn, kubeadmConfig: kubeadmKubeletConfig,
		kubeadmFlags: kubeadmFlagsEnv, defaultKubelet: extraArgs, nodeKubeconfig: string(kc),
	} {
		writeFile(t, path, content)
	}
	t.Cleanup(func() { tearDownKubeadmNode(t) })
	mustRun(t, "systemctl", "daemon-reload")
	mustRun(t, "systemctl", "enable", "--now", "kubelet.service")
}

func tearDownKubeadmNode(t *testing.T) {
	if t.Failed() {
		for _, unit := range []string{"kubelet.service", "nodelet.service"} {
			out, _ := execOut("journalctl", "-u", unit, "--no-pager", "-n", "60")
			t.Logf("journal of %s:\n%s", unit, out)
		}
	}
	entries, _ := os.ReadDir(staticPodDir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(staticPodDir, e.Name()))
	}
	// Not testutil.WaitFor: a failure here must not cut the rest of the clean-up short, or a
	// kubelet would be left running under the next tests.
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		if len(handoverContainers(t)) == 0 {
			break
		}
	}
	_, _ = execOut("dpkg", "--purge", "nodelet") // hands back to the upstream kubelet if switched
	_, _ = execOut("systemctl", "disable", "--now", "kubelet.service")
	for _, path := range []string{kubeletUnit, kubeadmDropIn, kubeadmConfig, kubeadmFlags, defaultKubelet, nodeKubeconfig, kubeletBin, watchdogDropIn} {
		_ = os.Remove(path)
	}
	_, _ = execOut("systemctl", "daemon-reload")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if resp, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{}); err == nil {
		for _, sb := range resp.Items {
			_, _ = rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: sb.Id})
			_, _ = rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: sb.Id})
		}
	}
	// The next tests start from an empty root directory of their own; this one's goes.
	_ = os.RemoveAll("/var/lib/kubelet")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := execOut(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	return out
}

// expectUnit checks systemd's properties of a unit.
func expectUnit(t *testing.T, unit string, want map[string]string) {
	t.Helper()
	props := make([]string, 0, len(want))
	for k := range want {
		props = append(props, k)
	}
	got := systemdShow(t, unit, props...)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s's %s = %q, want %q", unit, k, got[k], w)
		}
	}
}

// expectExe checks the binary a unit's main process runs.
func expectExe(t *testing.T, unit, want string) {
	t.Helper()
	pid := systemdShow(t, unit, "MainPID")["MainPID"]
	got, err := os.Readlink("/proc/" + pid + "/exe")
	if err != nil || got != want {
		t.Errorf("%s's main process %s runs %q (%v), want %s", unit, pid, got, err, want)
	}
}

// healthy waits for the kubelet's /healthz on kubeadm's port.
func healthy(t *testing.T, who string) {
	t.Helper()
	testutil.WaitFor(t, podTimeout, who+"'s healthz", func() (bool, string) {
		resp, err := http.Get("http://127.0.0.1:10248/healthz")
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && string(b) == "ok", resp.Status + " " + string(b)
	})
}

// expectNodeletIsTheKubelet checks the switched node: kubelet.service is nodelet.service, a
// Type=notify unit that is active (systemd holds it activating until READY=1), its process
// is nodelet given kubeadm's flags, its config and the extra args, and no upstream kubelet runs.
func expectNodeletIsTheKubelet(t *testing.T) {
	t.Helper()
	expectUnit(t, "kubelet.service", map[string]string{"Id": "nodelet.service"})
	expectUnit(t, "nodelet.service", map[string]string{
		"Type": "notify", "ActiveState": "active", "SubState": "running", "NRestarts": "0",
		"WatchdogUSec": strconv.Itoa(int(watchdogSec.Seconds())) + "s",
	})
	expectExe(t, "nodelet.service", "/usr/bin/nodelet")
	pid := systemdShow(t, "nodelet.service", "MainPID")["MainPID"]
	b, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	t.Logf("nodelet runs as %q", args)
	for _, want := range []string{
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--config=/var/lib/kubelet/config.yaml", "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
		"--hostname-override=guest-node", "--node-ip=10.99.0.2", "--v=2",
	} {
		if !contains(args, want) {
			t.Errorf("nodelet's arguments lack %s", want)
		}
	}
	if contains(args, "--config=/etc/nodelet/config.yaml") {
		t.Error("nodelet got the package's own config too: kubeadm's KUBELET_CONFIG_ARGS must win")
	}
	if out, err := execOut("systemctl", "status", "--no-pager", "nodelet.service"); err != nil {
		t.Errorf("systemctl status nodelet: %v\n%s", err, out)
	} else {
		t.Logf("systemctl status nodelet:\n%s", out)
	}
	if pids := processesOf(kubeletBin); len(pids) > 0 {
		t.Errorf("the upstream kubelet still runs: pids %v", pids)
	}
	healthy(t, "nodelet")
}

// expectWatchdog checks systemd's watchdog over nodelet: pings keep coming (the watchdog's
// timestamp moves) and nodelet is not restarted for several periods; then a frozen nodelet
// (SIGSTOP) misses them and systemd restarts it, which restarts no pod either.
func expectWatchdog(t *testing.T, before map[string]snapContainer) {
	t.Helper()
	first := systemdShow(t, "nodelet.service", "MainPID", "WatchdogTimestampMonotonic")
	time.Sleep(3 * watchdogSec)
	got := systemdShow(t, "nodelet.service", "MainPID", "WatchdogTimestampMonotonic", "NRestarts", "ActiveState")
	if got["MainPID"] != first["MainPID"] || got["NRestarts"] != "0" || got["ActiveState"] != "active" {
		t.Errorf("nodelet over three watchdog periods: %v, want the same process %s, active, never restarted", got, first["MainPID"])
	}
	a, _ := strconv.ParseInt(first["WatchdogTimestampMonotonic"], 10, 64)
	b, _ := strconv.ParseInt(got["WatchdogTimestampMonotonic"], 10, 64)
	if b <= a || time.Duration(b-a)*time.Microsecond < watchdogSec {
		t.Errorf("systemd's last watchdog ping moved from %d to %d µs: nodelet is not pinging", a, b)
	}
	mustRun(t, "kill", "-STOP", first["MainPID"])
	testutil.WaitFor(t, podTimeout, "systemd restarting the frozen nodelet", func() (bool, string) {
		now := systemdShow(t, "nodelet.service", "MainPID", "NRestarts", "ActiveState")
		return now["NRestarts"] == "1" && now["ActiveState"] == "active" && now["MainPID"] != first["MainPID"], fmt.Sprint(now)
	})
	if out, _ := execOut("journalctl", "-u", "nodelet.service", "--no-pager"); !strings.Contains(out, "Watchdog timeout") {
		t.Errorf("the journal has no watchdog timeout for nodelet.service:\n%s", testutil.Tail(out, 3000))
	}
	healthy(t, "the restarted nodelet")
	expectSamePods(t, before)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// processesOf lists the pids whose executable is bin.
func processesOf(bin string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if exe, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && exe == bin {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
