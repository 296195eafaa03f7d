package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/cli/podrun"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
	"github.com/nodelet/nodelet/internal/testutil"
)

func oneManifest(t *testing.T, name, policy string) *v1.Pod {
	t.Helper()
	manifest := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},
"spec":{"restartPolicy":"` + policy + `","terminationGracePeriodSeconds":7,
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"]}]}}`
	pod, err := source.ReadManifest([]byte(manifest), "/run/"+name+".json", "node1")
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// otherSandbox is a pod of this node the foreground run did not start (a stopped daemon's).
func otherSandbox(t *testing.T, fake *fakecri.Fake) string {
	t.Helper()
	resp, err := fake.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "other-node1", Namespace: "default", Uid: "other-uid"},
		Labels: map[string]string{container.LabelPodName: "other-node1", container.LabelPodNamespace: "default",
			container.LabelPodUID: "other-uid", container.LabelNode: "node1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.PodSandboxId
}

// A foreground pod runs with the daemon's machinery; stopping it kills it with its grace
// period and removing it leaves nothing behind, while the runtime's other pods of this node
// are left alone (no housekeeping).
func TestRunPodStopsAndRemovesOnlyItsPod(t *testing.T) {
	cfg, fake, _ := testConfig(t)
	other := otherSandbox(t, fake)
	pod := oneManifest(t, "web", "Always")
	err := RunPod(context.Background(), cfg, pod, func(ctx context.Context, p podrun.Pod) error {
		testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
		time.Sleep(2500 * time.Millisecond) // a housekeeping tick would have come by now
		if p.Done() {
			t.Error("a running pod is done")
		}
		if st, ok := p.Status(); !ok || st.Phase != v1.PodRunning {
			t.Errorf("status %v %v, want Running", ok, st.Phase)
		}
		if err := p.Stop(ctx); err != nil {
			return err
		}
		if running(fake, "web") != nil || !p.Done() {
			t.Error("web still running after Stop")
		}
		if cs := podContainers(fake, "web"); len(cs) != 1 || cs[0].StopTimeout != 7 {
			t.Errorf("containers %+v, want one stopped with the 7s grace period", cs)
		}
		if tl, ok := p.Timeline(); !ok || len(tl.Steps) == 0 {
			t.Error("no timeline")
		}
		return p.Remove(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if cs := podContainers(fake, "web"); len(cs) != 0 {
		t.Errorf("%d containers left", len(cs))
	}
	sbs := fake.Sandboxes()
	if len(sbs) != 1 || sbs[0].ID != other {
		t.Errorf("sandboxes left %+v, want only the other pod's", sbs)
	}
}

// A pod that ends by itself is done with its phase and exit code in the status.
func TestRunPodReportsTheEnd(t *testing.T) {
	cfg, fake, _ := testConfig(t)
	pod := oneManifest(t, "job", "Never")
	err := RunPod(context.Background(), cfg, pod, func(ctx context.Context, p podrun.Pod) error {
		testutil.Eventually(t, "job running", func() bool { return running(fake, "job") != nil })
		if err := fake.ExitContainer(running(fake, "job").ID, 3); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "job done", p.Done)
		st, _ := p.Status()
		if code := podrun.ExitCode(pod, st); st.Phase != v1.PodFailed || code != 3 {
			t.Errorf("phase %s exit code %d, want Failed and 3", st.Phase, code)
		}
		return p.Remove(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fake.Sandboxes()) != 0 {
		t.Error("sandbox left")
	}
}

// The foreground run opens no listener and refuses a cluster configuration.
func TestRunPodRefusesKubeconfigAndServesNothing(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.Kubeconfig = "/etc/kubernetes/kubelet.conf"
	called := false
	err := RunPod(context.Background(), cfg, oneManifest(t, "x", "Never"), func(context.Context, podrun.Pod) error {
		called = true
		return nil
	})
	if err == nil || called {
		t.Fatalf("RunPod with --kubeconfig: %v, drive called %v", err, called)
	}
}

// A failing component ends drive's context with its error, and the pod's waits return.
func TestRunPodDriveSeesTheMachineryStop(t *testing.T) {
	cfg, fake, _ := testConfig(t)
	pod := oneManifest(t, "web", "Always")
	fail := make(chan struct{})
	foregroundBuilt = func(a *agent) {
		a.comps.start("failing part", func(ctx context.Context) error {
			select {
			case <-fail:
				return errors.New("boom")
			case <-ctx.Done():
				return nil
			}
		})
	}
	defer func() { foregroundBuilt = func(*agent) {} }()
	err := RunPod(context.Background(), cfg, pod, func(ctx context.Context, p podrun.Pod) error {
		testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
		close(fail)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("drive's context did not end")
		}
		if err := p.Stop(context.Background()); err == nil {
			t.Error("Stop succeeded with the machinery gone")
		}
		return context.Cause(ctx)
	})
	if err == nil || !strings.Contains(err.Error(), "failing part: boom") {
		t.Fatalf("RunPod: %v, want the component's failure", err)
	}
}

// A signal while the machinery is still being built (here: the runtime never answers) ends
// the run at once, without calling drive.
func TestRunPodInterruptedBeforeThePodStarts(t *testing.T) {
	cfg, _, _ := testConfig(t)
	cfg.Kubelet.ContainerRuntimeEndpoint = "unix://" + t.TempDir() + "/nothing.sock"
	cfg.ImageServiceEndpoint = cfg.Kubelet.ContainerRuntimeEndpoint
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("interrupt signal received")) })
	start := time.Now()
	err := RunPod(ctx, cfg, oneManifest(t, "x", "Never"), func(context.Context, podrun.Pod) error {
		t.Error("drive called without a runtime")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "interrupt signal received") || time.Since(start) > 10*time.Second {
		t.Fatalf("RunPod: %v after %v, want the interruption at once", err, time.Since(start))
	}
}

// The whole foreground run on the fake runtime: the container's log (written where the
// runtime writes it) is streamed with its name, the steps are told, the run ends with the
// container's exit code, and the pod and its logs are gone afterwards.
func TestForegroundRunOfAFailingPod(t *testing.T) {
	cfg, fake, _ := testConfig(t)
	pod := oneManifest(t, "job", "Never")
	var logs, events bytes.Buffer
	f := &podrun.Foreground{Pod: pod, PodLogsDir: cfg.Kubelet.PodLogsDir, Logs: &logs, Events: &events}
	var res podrun.Result
	err := RunPod(context.Background(), cfg, pod, func(ctx context.Context, p podrun.Pod) error {
		testutil.Eventually(t, "job running", func() bool { return running(fake, "job") != nil })
		c := running(fake, "job")
		entry := time.Now().UTC().Format(time.RFC3339Nano) + " stdout F working\n"
		if err := os.WriteFile(c.LogPath, []byte(entry), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := fake.ExitContainer(c.ID, 3); err != nil {
			t.Fatal(err)
		}
		var err error
		res, err = f.Drive(ctx, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if code := podrun.ExitCode(pod, res.Status); res.Interrupted || code != 3 {
		t.Errorf("result %+v, exit code %d; want 3", res, code)
	}
	if logs.String() != "c | working\n" {
		t.Errorf("logs %q", logs.String())
	}
	for _, want := range []string{"] admitted: file", "] sandbox created", "] container started c",
		"pod default/job-node1 Failed: container c exited with code 3", "pod default/job-node1 removed"} {
		if !strings.Contains(events.String(), want) {
			t.Errorf("events do not say %q:\n%s", want, events.String())
		}
	}
	if len(fake.Sandboxes()) != 0 || len(fake.Containers()) != 0 {
		t.Error("the pod is still in the runtime")
	}
	if _, err := os.Stat(podrun.LogDir(cfg.Kubelet.PodLogsDir, pod)); !os.IsNotExist(err) {
		t.Errorf("the pod's log directory is still there: %v", err)
	}
}
