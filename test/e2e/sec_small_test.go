//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// Small attack classes of issue 40: what a pod, a crash or a slow client can do to the node
// agent's start-up, its admission and its ports.

// sysctlPod is a static pod setting one sysctl, in the host's network or IPC namespace when
// hostNS says so ("hostNetwork" or "hostIPC").
func sysctlPod(name, sysctl, hostNS string) string {
	host := ""
	if hostNS != "" {
		host = "  " + hostNS + ": true\n"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
%s  terminationGracePeriodSeconds: 1
  securityContext:
    sysctls: [{name: %s, value: "1"}]
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`, name, host, sysctl, busybox)
}

// A safe sysctl of a namespace the pod shares with the host would set the node's own value:
// the pod is refused at admission with SysctlForbidden (as upstream), never reaching runc,
// while the same sysctl in the pod's own namespace runs.
func TestSecSmallSysctlInHostNamespaceRefused(t *testing.T) {
	n, port := startStatusNodelet(t)
	n.writeManifest("own.yaml", sysctlPod("own", "net.ipv4.tcp_syncookies", ""))
	n.writeManifest("hostnet.yaml", sysctlPod("hostnet", "net.ipv4.tcp_syncookies", "hostNetwork"))
	n.writeManifest("hostipc.yaml", sysctlPod("hostipc", "kernel.shm_rmid_forced", "hostIPC"))
	waitRunning(t, "own", "main", 60*time.Second)
	for pod, ns := range map[string]string{"hostnet": "network", "hostipc": "IPC"} {
		var p *v1.Pod
		testutil.WaitFor(t, 30*time.Second, pod+" refused", func() (bool, string) {
			p = podStatus(t, port, pod)
			if p == nil {
				return false, "not in /pods yet"
			}
			return p.Status.Phase == v1.PodFailed, fmt.Sprintf("phase %s, reason %q", p.Status.Phase, p.Status.Reason)
		})
		if p.Status.Reason != "SysctlForbidden" || !strings.Contains(p.Status.Message, "host "+ns) {
			t.Errorf("%s: reason %q message %q, want SysctlForbidden naming the host %s namespace", pod, p.Status.Reason, p.Status.Message, ns)
		}
		if sbs := sandboxes(t, pod); len(sbs) != 0 {
			t.Errorf("%s: refused pod has %d sandboxes", pod, len(sbs))
		}
	}
}

// Temporary files of atomic writes left by a crash are swept at start; the device plugin
// directory and the checkpoints are owner-only, as upstream.
func TestSecSmallStartSweepsCrashLeftovers(t *testing.T) {
	n := newNodelet(t)
	pod := filepath.Join(n.rootDir, "pods", "5b0e7c1a-0000-4000-8000-00000000e2e1")
	leftovers := []string{
		filepath.Join(n.rootDir, ".cpu_manager_state.tmp-2791304"),
		filepath.Join(n.rootDir, ".memory_manager_state.tmp-17"),
		filepath.Join(n.rootDir, "device-plugins", ".kubelet_internal_checkpoint.tmp-42"),
		filepath.Join(pod, ".userns.tmp-9"),
	}
	kept := filepath.Join(n.rootDir, "operator-notes.tmp")
	for _, p := range append([]string{kept}, leftovers...) {
		writeHostFile(t, p, "half-written")
	}
	n.start()
	t.Cleanup(n.cleanup)
	n.writeManifest("web.yaml", podYAML("web", "Always", "exec sleep 3600"))
	waitRunning(t, "web", "main", 60*time.Second)
	for _, p := range leftovers {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s left in place (%v)", p, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("%s, not nodelet's, was removed: %v", kept, err)
	}
	dir := filepath.Join(n.rootDir, "device-plugins")
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("%s: %v, %v; want mode 0750", dir, fi.Mode().Perm(), err)
	}
}

// A corrupt pods/<uid>/userns file (a node that never ran a hostUsers: false pod, or a pod
// long gone) does not stop the node from starting: pods run.
func TestSecSmallCorruptUserNamespaceFileDoesNotStopTheNode(t *testing.T) {
	n := newNodelet(t)
	writeHostFile(t, filepath.Join(n.rootDir, "pods", "5b0e7c1a-0000-4000-8000-00000000e2e2", "userns"), `{"uidMappings": [`)
	n.start()
	t.Cleanup(n.cleanup)
	n.writeManifest("web.yaml", podYAML("web", "Always", "exec sleep 3600"))
	waitRunning(t, "web", "main", 60*time.Second)
	if !strings.Contains(n.log(), "Skipping the pod's user namespace file") {
		t.Errorf("the corrupt file was not logged")
	}
}

// A client that opens connections to the read-only port and never finishes its headers is
// cut off, instead of holding a connection for the 4 hours a streaming request may last.
func TestSecSmallSlowlorisIsCutOff(t *testing.T) {
	_, port := startStatusNodelet(t)
	waitHTTPOK(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	took := testutil.SlowHeaders(t, conn, 30*time.Second)
	t.Logf("a client that never finished its headers was cut off after %v", took)
}

func writeHostFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
