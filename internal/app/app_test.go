package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
	"github.com/nodelet/nodelet/internal/testutil"
)

// These tests run the whole standalone node (sources, merger, sync loop, workers, PLEG,
// runtime manager) against the hand-written fake CRI server.

func startNode(t *testing.T, extra ...string) (*fakecri.Fake, string) {
	t.Helper()
	cfg, fake, manifests := testConfig(t, extra...)
	startNodeWith(t, cfg)
	return fake, manifests
}

// startNodeWith runs nodelet with cfg until the test ends.
func startNodeWith(t *testing.T, cfg *config.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// testConfig is a standalone node's configuration on a fake runtime and a fresh manifest dir.
func testConfig(t *testing.T, extra ...string) (*config.Config, *fakecri.Fake, string) {
	t.Helper()
	fake, endpoint := fakecri.Start(t)
	fake.AddImage("busybox:1.36")
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags := config.AddFlags(fs)
	args := append([]string{
		"--pod-manifest-path=" + manifests, "--root-dir=" + filepath.Join(dir, "root"),
		"--container-runtime-endpoint=" + endpoint, "--hostname-override=node1", "--healthz-port=0",
		// The fake runtime's pods must not get real cgroups.
		"--cgroups-per-qos=false", "--enforce-node-allocatable=none",
	}, extra...)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := flags.Complete(fs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Kubelet.PodLogsDir = filepath.Join(dir, "logs")
	return cfg, fake, manifests
}

func writePod(t *testing.T, dir, name, policy string) {
	t.Helper()
	pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},
"spec":{"restartPolicy":%q,"terminationGracePeriodSeconds":1,
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"]}]}}`, name, policy)
	if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
}

func podContainers(fake *fakecri.Fake, pod string) []fakecri.Container {
	var out []fakecri.Container
	for _, c := range fake.Containers() {
		if c.Config.Labels["io.kubernetes.pod.name"] == pod+"-node1" {
			out = append(out, c)
		}
	}
	return out
}

func running(fake *fakecri.Fake, pod string) *fakecri.Container {
	for _, c := range podContainers(fake, pod) {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return &c
		}
	}
	return nil
}

func TestStaticPodLifecycle(t *testing.T) {
	fake, dir := startNode(t)
	writePod(t, dir, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	first := running(fake, "web")

	// The container dies; the PLEG notices and the first restart is immediate.
	if err := fake.ExitContainer(first.ID, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "web restarted", func() bool {
		c := running(fake, "web")
		return c != nil && c.ID != first.ID && c.Config.Metadata.Attempt == 1
	})

	// Deleting the manifest stops and removes every container and the sandbox.
	if err := os.Remove(filepath.Join(dir, "web.json")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "web removed", func() bool {
		return len(fake.Containers()) == 0 && len(fake.Sandboxes()) == 0
	})
}

func TestNeverPolicyDoesNotRestart(t *testing.T) {
	fake, dir := startNode(t)
	writePod(t, dir, "once", "Never")
	testutil.Eventually(t, "once running", func() bool { return running(fake, "once") != nil })
	if err := fake.ExitContainer(running(fake, "once").ID, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // two relists and a sync tick
	if cs := podContainers(fake, "once"); len(cs) != 1 {
		t.Fatalf("restartPolicy Never: %d container instances, want 1", len(cs))
	}
}

func TestMaxPodsRejectsTheNewestPod(t *testing.T) {
	fake, dir := startNode(t, "--max-pods=1")
	writePod(t, dir, "a", "Always")
	testutil.Eventually(t, "a running", func() bool { return running(fake, "a") != nil })
	writePod(t, dir, "b", "Always")
	time.Sleep(2 * time.Second)
	if cs := podContainers(fake, "b"); len(cs) != 0 {
		t.Fatalf("pod over maxPods got %d containers", len(cs))
	}
}

// imageServiceEndpoint: image look-ups go to the image service's socket, container calls to
// the runtime's.
func TestSeparateImageServiceEndpoint(t *testing.T) {
	imageService, imageEndpoint := fakecri.Start(t)
	imageService.AddImage("busybox:1.36")
	fake, dir := startNode(t, "--image-service-endpoint="+imageEndpoint)
	writePod(t, dir, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	if n := imageService.CountCalls("ImageStatus"); n == 0 {
		t.Error("the image service was never asked for the image")
	}
	if n := fake.CountCalls("ImageStatus") + fake.CountCalls("PullImage"); n != 0 {
		t.Errorf("the runtime's socket got %d image calls", n)
	}
}

// --exit-on-lock-contention: another process opening the lock file stops nodelet cleanly.
func TestLockContentionStopsNodelet(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "kubelet.lock")
	cfg, _, _ := testConfig(t, "--lock-file="+lock, "--exit-on-lock-contention")
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cfg) }()
	testutil.Eventually(t, "the lock held", func() bool { _, err := os.Stat(lock); return err == nil })
	time.Sleep(200 * time.Millisecond) // the contention watch is set up
	select {
	case err := <-done:
		t.Fatalf("stopped before any contention: %v", err)
	default:
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		f, err := os.Open(lock) // what a second kubelet does; again until seen
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run: %v, want a clean stop", err)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("nodelet kept running after lock contention")
		}
	}
}

// With shutdownGracePeriod a stop request terminates the pods before nodelet exits; without
// it they keep running for the next nodelet to adopt (TestStaticPodLifecycle and the e2e
// restart test cover that).
func TestGracefulNodeShutdownStopsPods(t *testing.T) {
	cfg, fake, dir := testConfig(t)
	cfg.Kubelet.ShutdownGracePeriod = metav1.Duration{Duration: 3 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"terminationGracePeriodSeconds":30,
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "web.json"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("nodelet did not stop")
	}
	if c := running(fake, "web"); c != nil {
		t.Errorf("web still running after a graceful node shutdown: %+v", c.ID)
	}
	var stops []int64
	for _, c := range podContainers(fake, "web") {
		stops = append(stops, c.StopTimeout)
	}
	if len(stops) == 0 || stops[0] != 3 {
		t.Errorf("stop timeouts %v, want the 3s shutdown budget (less than the pod's 30s)", stops)
	}
}

// A static pod's emptyDir is set up by the volume manager before its container is created and
// given to it; once the manifest goes, the volume and then the pod's directory are removed.
func TestStaticPodVolumeLifecycle(t *testing.T) {
	fake, dir := startNode(t)
	manifest := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"vol"},
"spec":{"terminationGracePeriodSeconds":1,"volumes":[{"name":"data","emptyDir":{}}],
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"],"volumeMounts":[{"name":"data","mountPath":"/data"}]}]}}`
	if err := os.WriteFile(filepath.Join(dir, "vol.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "vol running", func() bool { return running(fake, "vol") != nil })
	c := running(fake, "vol")
	podDir := filepath.Join(filepath.Dir(dir), "root", "pods", c.Config.Labels[container.LabelPodUID])
	var host string
	for _, m := range c.Config.Mounts {
		if m.ContainerPath == "/data" {
			host = m.HostPath
		}
	}
	if want := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "data"); host != want {
		t.Fatalf("/data is mounted from %q, want %q", host, want)
	}
	if err := os.WriteFile(filepath.Join(host, "f"), []byte("x"), 0o644); err != nil {
		t.Fatalf("the volume is not there: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "vol.json")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the pod's directory removed", func() bool {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err)
	})
}
