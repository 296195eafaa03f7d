//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// stopSignalPod is a static pod of two containers that each write the signal they were stopped
// with to <out>/<container>: "usr1" sets lifecycle.stopSignal SIGUSR1, "plain" sets none.
func stopSignalPod(out string) string {
	// The shell runs a trap only between commands: sleep in the background and wait for it.
	script := func(name string) string {
		return fmt.Sprintf("trap 'echo USR1 > /out/%[1]s; exit 0' USR1; trap 'echo TERM > /out/%[1]s; exit 0' TERM; "+
			"touch /out/%[1]s.ready; while true; do sleep 1 & wait $!; done", name)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: stopsig
spec:
  os: {name: linux}
  terminationGracePeriodSeconds: 20
  volumes:
  - name: out
    hostPath: {path: %q}
  containers:
  - name: usr1
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[3]q]
    volumeMounts: [{name: out, mountPath: /out}]
    lifecycle: {stopSignal: SIGUSR1}
  - name: plain
    image: %[2]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %[4]q]
    volumeMounts: [{name: out, mountPath: /out}]
`, out, busybox, script("usr1"), script("plain"))
}

// runtimeVersion is what CRI Version says of the runtime under test.
func runtimeVersion(t *testing.T) *cri.VersionResponse {
	t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	v, err := rt.Version(ctx, &cri.VersionRequest{})
	if err != nil {
		t.Fatalf("CRI Version: %v", err)
	}
	return v
}

// takesStopSignals says whether the runtime is containerd 2.1 or later, the first to take a
// container's stop signal through CRI.
func takesStopSignals(v *cri.VersionResponse) bool {
	var major, minor int
	_, err := fmt.Sscanf(strings.TrimPrefix(v.RuntimeVersion, "v"), "%d.%d", &major, &minor)
	return v.RuntimeName == "containerd" && err == nil && (major > 2 || major == 2 && minor >= 1)
}

// With the ContainerStopSignals gate on (static pods: the control plane runs with the gate off
// and would drop the field), on containerd 2.1 or later: a container whose lifecycle.stopSignal
// is SIGUSR1 is stopped with SIGUSR1 and its neighbour with SIGTERM, and the status reports each
// container's signal as the runtime does (SIGTERM for the one that sets none). On an older
// runtime (containerd 1.6) the pod is refused, naming the runtime and the release that takes it.
func TestContainerStopSignals(t *testing.T) {
	version := runtimeVersion(t)
	out := t.TempDir()
	port := freePort(t)
	n := startNodelet(t, "--feature-gates=ContainerStopSignals=true", "--address=127.0.0.1",
		fmt.Sprintf("--read-only-port=%d", port), fmt.Sprintf("--port=%d", freePort(t)),
		"--authentication-token-webhook=false", "--authorization-mode=AlwaysAllow", "--cert-dir="+t.TempDir())
	n.writeManifest("stopsig.yaml", stopSignalPod(out))

	if !takesStopSignals(version) {
		want := fmt.Sprintf("spec.containers[0].lifecycle.stopSignal: container stop signals need a runtime that takes the signal "+
			"through CRI; this node runs %s %s; containerd 2.1 or later has it", version.RuntimeName, strings.TrimPrefix(version.RuntimeVersion, "v"))
		var p *v1.Pod
		testutil.WaitFor(t, 30*time.Second, "stopsig refused", func() (bool, string) {
			p = podStatus(t, port, "stopsig")
			return p != nil && p.Status.Phase == v1.PodFailed, fmt.Sprint(p != nil)
		})
		t.Logf("refused on %s %s: %s", version.RuntimeName, version.RuntimeVersion, p.Status.Message)
		if p.Status.Reason != "PodFieldNotSupported" || !strings.Contains(p.Status.Message, want) {
			t.Errorf("refusal %q %q, want PodFieldNotSupported %q", p.Status.Reason, p.Status.Message, want)
		}
		if sbs := sandboxes(t, "stopsig"); len(sbs) != 0 {
			t.Errorf("refused pod has %d sandboxes", len(sbs))
		}
		return
	}

	for _, c := range []string{"usr1", "plain"} {
		waitRunning(t, "stopsig", c, 60*time.Second)
		waitFile(t, filepath.Join(out, c+".ready"))
	}
	testutil.WaitFor(t, 20*time.Second, "stop signals in the status", func() (bool, string) {
		p := podStatus(t, port, "stopsig")
		if p == nil {
			return false, "not in /pods"
		}
		got := map[string]string{}
		for _, cs := range p.Status.ContainerStatuses {
			got[cs.Name] = string(ptr.Deref(cs.StopSignal, ""))
		}
		if got["usr1"] == "SIGUSR1" && got["plain"] == "SIGTERM" {
			t.Logf("status stop signals %v", got)
			return true, ""
		}
		return false, fmt.Sprint(got)
	})

	n.removeManifest("stopsig.yaml")
	for c, want := range map[string]string{"usr1": "USR1", "plain": "TERM"} {
		waitFile(t, filepath.Join(out, c))
		got, _ := os.ReadFile(filepath.Join(out, c))
		t.Logf("container %s trapped %s", c, strings.TrimSpace(string(got)))
		if strings.TrimSpace(string(got)) != want {
			t.Errorf("container %s was stopped with %q, want %s", c, got, want)
		}
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, path, func() (bool, string) {
		_, err := os.Stat(path)
		return err == nil, fmt.Sprint(err)
	})
}
