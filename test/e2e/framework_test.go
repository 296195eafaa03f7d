//go:build e2e

// Package e2e drives a real nodelet binary against the project's real containerd.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/util/wait"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

const nodeName = "e2e-node"

var (
	endpoint   = envOr("NODELET_CRI_ENDPOINT", "unix:///run/nodelet/containerd/containerd.sock")
	nodeletBin string
	rt         cri.RuntimeServiceClient
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	keepInheritedFDs()
	dir, err := os.MkdirTemp("", "nodelet-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	nodeletBin = os.Getenv("NODELET_BIN")
	if nodeletBin == "" {
		nodeletBin = filepath.Join(dir, "nodelet")
		build := exec.Command("go", "build", "-o", nodeletBin, "../../cmd/nodelet")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building nodelet:", err)
			return 1
		}
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "dialing containerd:", err)
		return 1
	}
	defer conn.Close()
	rt = cri.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rt.Version(ctx, &cri.VersionRequest{}); err != nil {
		fmt.Fprintf(os.Stderr, "containerd is not answering at %s: %v\nrun `make containerd images` first\n", endpoint, err)
		return 1
	}
	return m.Run()
}

// keepInheritedFDs marks the descriptors this process inherited beyond stdio close-on-exec:
// `flock LOCK go test` hands its lock's descriptor down, and a daemon a test starts (the API
// server after an outage, a restarted controller manager) would hold the e2e lock for as long
// as it runs, blocking every later run.
func keepInheritedFDs() {
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// nodelet is one running nodelet process.
type nodelet struct {
	t           *testing.T
	cmd         *exec.Cmd
	manifests   string
	rootDir     string
	logPath     string
	healthzPort int
	args        []string
}

// startNodelet runs nodelet on a fresh manifest directory. Cleanup removes every manifest and
// waits until the runtime holds none of the test's pods.
func startNodelet(t *testing.T, extraArgs ...string) *nodelet {
	t.Helper()
	n := newNodelet(t, extraArgs...)
	n.start()
	t.Cleanup(n.cleanup)
	return n
}

// newNodelet prepares a nodelet's directories and arguments without starting it, for tests
// that plant files in its root directory first.
func newNodelet(t *testing.T, extraArgs ...string) *nodelet {
	t.Helper()
	base := t.TempDir()
	n := &nodelet{
		t: t, manifests: filepath.Join(base, "manifests"), rootDir: filepath.Join(base, "root"),
		logPath: filepath.Join(base, "nodelet.log"), healthzPort: freePort(t),
	}
	if err := os.MkdirAll(n.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	n.args = append([]string{
		"--pod-manifest-path=" + n.manifests, "--root-dir=" + n.rootDir,
		"--container-runtime-endpoint=" + endpoint, "--hostname-override=" + nodeName,
		fmt.Sprintf("--healthz-port=%d", n.healthzPort), "--file-check-frequency=5s", "-v=2",
		"--fail-swap-on=false", // as the conformance and bench kubelets: a dev machine may have swap
	}, extraArgs...)
	return n
}

func (n *nodelet) start() {
	n.t.Helper()
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	n.cmd = exec.Command(nodeletBin, n.args...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	healthz := fmt.Sprintf("http://127.0.0.1:%d/healthz", n.healthzPort)
	if err := pollHTTPOK(healthz, 30*time.Second); err != nil {
		// Cleanup is not registered yet: stop it here and show why it never came up.
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
		n.t.Fatalf("nodelet never served %s (%v; %v)\nnodelet log (last 6000 bytes):\n%s",
			healthz, err, n.cmd.ProcessState, tail(n.log(), 6000))
	}
}

// waitHTTPOK waits until url answers 200. Each of nodelet's listeners comes up on its own, so
// a healthy healthz does not mean another port is open yet.
func waitHTTPOK(t *testing.T, url string) {
	t.Helper()
	if err := pollHTTPOK(url, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// pollHTTPOK waits until url answers 200 or timeout passes; the error says what it answered last.
func pollHTTPOK(url string, timeout time.Duration) error {
	last := errors.New("not asked yet")
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) {
			resp, err := http.Get(url)
			if err != nil {
				last = err
				return false, nil
			}
			resp.Body.Close()
			last = fmt.Errorf("%s answered %s", url, resp.Status)
			return resp.StatusCode == http.StatusOK, nil
		})
	if err != nil {
		return fmt.Errorf("timed out after %v: %w", timeout, last)
	}
	return nil
}

// stop ends nodelet with the given signal and waits for it.
func (n *nodelet) stop(sig syscall.Signal) {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	_ = n.cmd.Process.Signal(sig)
	_, _ = n.cmd.Process.Wait()
	n.cmd = nil
}

func (n *nodelet) cleanup() {
	entries, _ := os.ReadDir(n.manifests)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(n.manifests, e.Name()))
	}
	if n.cmd == nil {
		n.start()
	}
	testutil.WaitFor(n.t, 90*time.Second, "all test pods removed from the runtime", func() (bool, string) {
		sbs := sandboxes(n.t, "")
		return len(sbs) == 0, fmt.Sprintf("%d sandboxes left", len(sbs))
	})
	n.stop(syscall.SIGTERM)
	if n.t.Failed() {
		logs, _ := os.ReadFile(n.logPath)
		n.t.Logf("nodelet log (last 6000 bytes):\n%s", tail(string(logs), 6000))
	}
}

func (n *nodelet) writeManifest(file, content string) {
	n.t.Helper()
	if err := os.WriteFile(filepath.Join(n.manifests, file), []byte(content), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func (n *nodelet) removeManifest(file string) {
	n.t.Helper()
	if err := os.Remove(filepath.Join(n.manifests, file)); err != nil {
		n.t.Fatal(err)
	}
}

func (n *nodelet) log() string {
	b, _ := os.ReadFile(n.logPath)
	return string(b)
}

// The shared helpers under the short names the package's tests call them by.
var (
	freePort = testutil.FreePort
	tail     = testutil.Tail
)

func criCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// sandboxes lists the runtime's sandboxes of pods on our test node, optionally for one pod name.
func sandboxes(t *testing.T, podName string) []*cri.PodSandbox {
	return sandboxesWhere(t, func(s *cri.PodSandbox) bool {
		name := s.Labels["io.kubernetes.pod.name"]
		return strings.HasSuffix(name, "-"+nodeName) && (podName == "" || name == podName+"-"+nodeName)
	})
}

// sandboxesWhere lists the runtime's sandboxes that keep holds for.
func sandboxesWhere(t *testing.T, keep func(*cri.PodSandbox) bool) []*cri.PodSandbox {
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		t.Fatalf("ListPodSandbox: %v", err)
	}
	var out []*cri.PodSandbox
	for _, s := range resp.Items {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// containers lists the runtime's containers of one pod (by manifest name) and container name.
func containers(t *testing.T, podName, container string) []*cri.Container {
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := rt.ListContainers(ctx, &cri.ListContainersRequest{Filter: &cri.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": podName + "-" + nodeName},
	}})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	var out []*cri.Container
	for _, c := range resp.Containers {
		if container == "" || c.Metadata.Name == container {
			out = append(out, c)
		}
	}
	return out
}

func runningContainer(t *testing.T, podName, container string) *cri.Container {
	for _, c := range containers(t, podName, container) {
		if c.State == cri.ContainerState_CONTAINER_RUNNING {
			return c
		}
	}
	return nil
}

func waitRunning(t *testing.T, podName, container string, timeout time.Duration) *cri.Container {
	t.Helper()
	var found *cri.Container
	testutil.WaitFor(t, timeout, podName+"/"+container+" running", func() (bool, string) {
		found = runningContainer(t, podName, container)
		return found != nil, fmt.Sprintf("%d containers", len(containers(t, podName, container)))
	})
	return found
}
