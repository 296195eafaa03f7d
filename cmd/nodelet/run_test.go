package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/cli/podrun"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

const jobManifest = `apiVersion: v1
kind: Pod
metadata:
  name: job
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
`

// endedPod is a pod that has already ended with status.
type endedPod struct{ status v1.PodStatus }

func (p endedPod) Status() (v1.PodStatus, bool)        { return p.status, true }
func (p endedPod) Timeline() (timeline.Timeline, bool) { return timeline.Timeline{}, false }
func (p endedPod) Done() bool                          { return true }
func (p endedPod) Stop(context.Context) error          { return nil }
func (p endedPod) Remove(context.Context) error        { return nil }

// fakeRunner stands in for app.RunPod: it records what it was given and drives a pod that
// ended with status.
type fakeRunner struct {
	status v1.PodStatus
	cfg    *config.Config
	pod    *v1.Pod
}

func (f *fakeRunner) run(ctx context.Context, cfg *config.Config, pod *v1.Pod, drive func(context.Context, podrun.Pod) error) error {
	f.cfg, f.pod = cfg, pod
	return drive(ctx, endedPod{status: f.status})
}

func writeManifest(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runRun(ctx context.Context, runner *fakeRunner, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	cmd := newRunCommand(runner.run, &out, &errOut)
	code = execute(ctx, cmd, args, &errOut)
	return code, out.String(), errOut.String()
}

// --wait runs the pod as the static pod source would make it (name with the node suffix) and
// exits with the failed container's exit code.
func TestRunWaitExitsWithThePodsResult(t *testing.T) {
	file := writeManifest(t, jobManifest)
	runner := &fakeRunner{status: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "main",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3}}}}}}
	code, _, stderr := runRun(context.Background(), runner, "-f", file, "--wait", "--healthz-port=0",
		"--hostname-override=node1", "--root-dir="+t.TempDir())
	if code != 3 {
		t.Fatalf("exit code %d, want 3; stderr:\n%s", code, stderr)
	}
	if runner.pod == nil || runner.pod.Name != "job-node1" || runner.cfg.NodeName != "node1" {
		t.Fatalf("runner got pod %v, config %+v", runner.pod, runner.cfg)
	}
	if !strings.Contains(stderr, "pod default/job-node1 Failed: container main exited with code 3") {
		t.Errorf("stderr:\n%s", stderr)
	}

	runner.status = v1.PodStatus{Phase: v1.PodSucceeded}
	if code, _, stderr := runRun(context.Background(), runner, "-f", file, "--wait", "--healthz-port=0", "--root-dir="+t.TempDir()); code != 0 {
		t.Errorf("a pod that Succeeded: exit code %d; stderr:\n%s", code, stderr)
	}
}

// Interrupted, the run exits 130 (SIGINT) or 143 (SIGTERM).
func TestRunWaitInterruptedExitsWithTheSignal(t *testing.T) {
	file := writeManifest(t, jobManifest)
	for cause, want := range map[string]int{"interrupt signal received": 130, "terminated signal received": 143} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errors.New(cause))
		interrupted := func(ctx context.Context, cfg *config.Config, pod *v1.Pod, drive func(context.Context, podrun.Pod) error) error {
			return drive(ctx, &stoppablePod{})
		}
		var out, errOut bytes.Buffer
		cmd := newRunCommand(interrupted, &out, &errOut)
		code := execute(ctx, cmd, []string{"-f", file, "--wait", "--healthz-port=0", "--root-dir=" + t.TempDir()}, &errOut)
		if code != want {
			t.Errorf("%s: exit code %d, want %d; stderr:\n%s", cause, code, want, errOut.String())
		}
	}
}

// stoppablePod runs until Stop.
type stoppablePod struct{ stopped bool }

func (p *stoppablePod) Status() (v1.PodStatus, bool)        { return v1.PodStatus{Phase: v1.PodRunning}, true }
func (p *stoppablePod) Timeline() (timeline.Timeline, bool) { return timeline.Timeline{}, false }
func (p *stoppablePod) Done() bool                          { return p.stopped }
func (p *stoppablePod) Stop(context.Context) error          { p.stopped = true; return nil }
func (p *stoppablePod) Remove(context.Context) error        { return nil }

// fakeNodelet answers like a running daemon: healthz, and /pods of its static directory with
// every pod Ready.
func fakeNodelet(t *testing.T, dir string) (port string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			_, _ = w.Write([]byte("ok"))
		case "/pods":
			list := v1.PodList{}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				path := filepath.Join(dir, e.Name())
				data, _ := os.ReadFile(path)
				if pod, err := source.ReadManifest(data, path, "node1"); err == nil {
					pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
					list.Items = append(list.Items, *pod)
				}
			}
			_ = json.NewEncoder(w).Encode(list)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// Without --wait the manifest goes into the daemon's static pod directory and the command
// waits for the daemon (here its read-only port) to report the pod Ready.
func TestRunHandsThePodToTheDaemon(t *testing.T) {
	static := t.TempDir()
	port := fakeNodelet(t, static)
	file := writeManifest(t, jobManifest)
	daemonFlags := []string{"--pod-manifest-path=" + static, "--hostname-override=node1",
		"--healthz-bind-address=127.0.0.1", "--healthz-port=" + port, "--address=127.0.0.1", "--read-only-port=" + port,
		"--authentication-token-webhook=false", "--authorization-mode=AlwaysAllow"}
	code, stdout, stderr := runRun(context.Background(), &fakeRunner{}, append([]string{"-f", file}, daemonFlags...)...)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	if data, err := os.ReadFile(filepath.Join(static, "job.yaml")); err != nil || string(data) != jobManifest {
		t.Errorf("static dir: %q, %v", data, err)
	}
	for _, want := range []string{"handed to the nodelet daemon", "pod default/job-node1 is Ready", "nodelet explain default/job-node1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}

	// A different manifest under that name is refused.
	other := writeManifest(t, strings.Replace(jobManifest, "busybox:1.36", "busybox:1.37", 1))
	if code, _, stderr := runRun(context.Background(), &fakeRunner{}, append([]string{"-f", other}, daemonFlags...)...); code != 1 ||
		!strings.Contains(stderr, "already holds a different manifest") {
		t.Errorf("a different manifest of the same name: exit %d, stderr:\n%s", code, stderr)
	}
}

func TestRunRefusals(t *testing.T) {
	static := t.TempDir()
	port := fakeNodelet(t, static)
	file := writeManifest(t, jobManifest)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no daemon", []string{"-f", file, "--pod-manifest-path=" + static, "--healthz-port=0"},
			"no nodelet daemon runs here"},
		{"no static dir", []string{"-f", file, "--healthz-port=" + port}, "use --wait to run the pod in this process"},
		{"a daemon runs", []string{"-f", file, "--wait", "--healthz-bind-address=127.0.0.1", "--healthz-port=" + port},
			"a nodelet daemon runs here (http://127.0.0.1:" + port + "/healthz answers (200 OK)); run without --wait to hand it the pod"},
		{"malformed", []string{"-f", writeManifest(t, "apiVersion: v1\nkind: Pod\nspec: {}\n"), "--wait", "--healthz-port=0"},
			"metadata.name: Required value"},
		{"no file", []string{"--wait"}, `required flag(s) "filename" not set`},
	} {
		code, _, stderr := runRun(context.Background(), &fakeRunner{}, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", tc.name, code, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(static); len(entries) != 0 {
		t.Errorf("refused runs wrote %d files", len(entries))
	}
}

func TestRunHelpSaysTheSemantics(t *testing.T) {
	code, stdout, _ := runCommand(t, &fakeRun{}, "run", "--help")
	if code != 0 {
		t.Fatalf("exit code %d", code)
	}
	for _, want := range []string{"--wait", "-f, --filename", "exit status 0", "130 (SIGINT) or 143 (SIGTERM)",
		"staticPodPath", "--timeout", "--container-runtime-endpoint", "refuses to run"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run --help does not mention %q", want)
		}
	}
}
