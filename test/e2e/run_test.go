//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// nodeletRun is one `nodelet run` process.
type nodeletRun struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
	err            error
}

// startRun starts `nodelet run -f manifest args...` with the flags of the e2e node: the
// project containerd, a scratch root dir, and a healthz port nothing answers on.
func startRun(t *testing.T, manifest string, args ...string) *nodeletRun {
	t.Helper()
	file := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &nodeletRun{done: make(chan struct{})}
	r.cmd = exec.Command(nodeletBin, append([]string{"run", "-f", file,
		"--container-runtime-endpoint=" + endpoint, "--hostname-override=" + nodeName,
		"--root-dir=" + filepath.Join(t.TempDir(), "root"), "--fail-swap-on=false"}, args...)...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("nodelet run stdout:\n%s\nstderr (last 6000 bytes):\n%s", r.stdout.String(), tail(r.stderr.String(), 6000))
		}
	})
	return r
}

// wait returns the exit code once the process ended, failing the test after timeout.
func (r *nodeletRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		t.Fatalf("nodelet run still running after %v", timeout)
	}
	var exit *exec.ExitError
	if errors.As(r.err, &exit) {
		return exit.ExitCode()
	}
	if r.err != nil {
		t.Fatalf("nodelet run: %v", r.err)
	}
	return 0
}

func noHealthzArgs(t *testing.T) string { return fmt.Sprintf("--healthz-port=%d", freePort(t)) }

// A pod that prints lines and exits 3: `nodelet run --wait` streams the lines, prefixed with
// the container's name, exits 3, and leaves nothing in the runtime.
func TestRunWaitStreamsLogsAndExitsWithThePodsCode(t *testing.T) {
	r := startRun(t, podYAML("runexit", "Never", "echo line 1; echo line 2; echo line 3 >&2; exit 3"), "--wait", noHealthzArgs(t))
	if code := r.wait(t, 90*time.Second); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	// stdout and stderr reach the log file through separate pipes, so only each stream's own
	// order is defined (kubectl logs shows the same file).
	out := r.stdout.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	slices.Sort(lines)
	if !slices.Equal(lines, []string{"main | line 1", "main | line 2", "main | line 3"}) ||
		strings.Index(out, "main | line 1") > strings.Index(out, "main | line 2") {
		t.Errorf("stdout:\n%s\nwant the three lines prefixed with the container's name, line 1 before line 2", out)
	}
	errOut := r.stderr.String()
	for _, want := range []string{"] admitted", "] container started main", "pod default/runexit-" + nodeName + " Failed: container main exited with code 3", "removed"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q", want)
		}
	}
	if cs, sbs := containers(t, "runexit", ""), sandboxes(t, "runexit"); len(cs) != 0 || len(sbs) != 0 {
		t.Errorf("%d containers and %d sandboxes left", len(cs), len(sbs))
	}
}

const interruptedPod = `apiVersion: v1
kind: Pod
metadata:
  name: runlong
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: main
    image: ` + busybox + `
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'echo got TERM; exit 0' TERM; echo started; while true; do sleep 1; done"]
    lifecycle:
      preStop:
        exec:
          command: ["sh", "-c", "echo prestop ran > /proc/1/fd/1"]
`

// SIGINT stops a long-running pod gracefully (preStop, then TERM within the grace period),
// its last lines are streamed, it is removed, and the run exits 130.
func TestRunWaitInterruptedStopsAndRemovesThePod(t *testing.T) {
	r := startRun(t, interruptedPod, "--wait", noHealthzArgs(t))
	testutil.WaitFor(t, 60*time.Second, "the pod's first line", func() (bool, string) {
		return strings.Contains(r.stdout.String(), "main | started"), r.stdout.String()
	})
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t, 60*time.Second); code != 130 {
		t.Fatalf("exit code %d after SIGINT, want 130", code)
	}
	out := r.stdout.String()
	if !strings.Contains(out, "main | prestop ran\n") || !strings.Contains(out, "main | got TERM\n") ||
		strings.Index(out, "prestop ran") > strings.Index(out, "got TERM") {
		t.Errorf("stdout:\n%s\nwant the preStop hook's line, then the TERM trap's", out)
	}
	if !strings.Contains(r.stderr.String(), "stopping pod default/runlong-"+nodeName) {
		t.Errorf("stderr does not say the pod is being stopped")
	}
	if cs, sbs := containers(t, "runlong", ""), sandboxes(t, "runlong"); len(cs) != 0 || len(sbs) != 0 {
		t.Errorf("%d containers and %d sandboxes left after the interrupted run", len(cs), len(sbs))
	}
}

// Without --wait the pod goes to the running standalone nodelet through its static pod
// directory; the command waits for the daemon (read-only port) to report it Ready. --wait
// beside the daemon is refused.
func TestRunHandsThePodToARunningNodelet(t *testing.T) {
	roPort, apiPort := freePort(t), freePort(t)
	apiFlags := []string{fmt.Sprintf("--read-only-port=%d", roPort), fmt.Sprintf("--port=%d", apiPort), "--address=127.0.0.1",
		"--authentication-token-webhook=false", "--authorization-mode=AlwaysAllow", "--cert-dir=" + t.TempDir()}
	n := startNodelet(t, apiFlags...)
	daemonFlags := append([]string{"--pod-manifest-path=" + n.manifests, fmt.Sprintf("--healthz-port=%d", n.healthzPort), "--timeout=90s"}, apiFlags...)

	refused := startRun(t, podYAML("handed", "Always", "exec sleep 3600"), append([]string{"--wait"}, daemonFlags...)...)
	if code := refused.wait(t, 30*time.Second); code != 1 || !strings.Contains(refused.stderr.String(), "a nodelet daemon runs here") {
		t.Errorf("--wait beside the daemon: exit %d, stderr %q", code, refused.stderr.String())
	}
	if len(sandboxes(t, "handed")) != 0 {
		t.Fatal("the refused --wait run started the pod")
	}

	r := startRun(t, podYAML("handed", "Always", "echo hi; exec sleep 3600"), daemonFlags...)
	if code := r.wait(t, 120*time.Second); code != 0 {
		t.Fatalf("hand-off: exit code %d", code)
	}
	out := r.stdout.String()
	for _, want := range []string{"handed to the nodelet daemon: wrote " + filepath.Join(n.manifests, "pod.yaml"),
		"pod default/handed-" + nodeName + " is Ready", "nodelet explain default/handed-" + nodeName} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not say %q:\n%s", want, out)
		}
	}
	waitRunning(t, "handed", "main", 30*time.Second)
	if _, err := os.Stat(filepath.Join(n.manifests, "pod.yaml")); err != nil {
		t.Errorf("the manifest is not in the daemon's directory: %v", err)
	}
}
