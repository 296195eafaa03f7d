//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

const crashLoopManifest = `apiVersion: v1
kind: Pod
metadata:
  name: crashloop
spec:
  restartPolicy: Always
  containers:
  - name: main
    image: nodelet.local/busybox:1.36
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo attempt; exit 1"]
`

// TestContainerGCKeepsOneDeadInstance crash-loops a container: as upstream, each death trims
// the container's dead instances to maxPerPodContainer (1) at once, without waiting for the
// once-a-minute pass, and the instance kept is the newest, the one `kubectl logs --previous`
// and the restart count need.
func TestContainerGCKeepsOneDeadInstance(t *testing.T) {
	n := startNodelet(t)
	n.writeManifest("crashloop.yaml", crashLoopManifest)
	// The first restart is at once, the second 10 s later: the third instance dies well before
	// the second periodic pass (one runs at start, the next a minute later).
	testutil.WaitFor(t, 2*time.Minute, "the third instance dead", func() (bool, string) {
		newest := newestDead(containers(t, "crashloop", "main"))
		return newest != nil && newest.Metadata.Attempt >= 2, fmt.Sprintf("newest dead %v", newest.GetMetadata())
	})
	testutil.WaitFor(t, 15*time.Second, "one dead instance, the newest", func() (bool, string) {
		list := containers(t, "crashloop", "main")
		dead, newest := exitedCount(list), newestDead(list)
		return dead == 1 && newest.Metadata.Attempt >= 2, fmt.Sprintf("%d dead, newest %v", dead, newest.GetMetadata())
	})
	if !strings.Contains(n.log(), "crashloop") {
		t.Fatal("nodelet never logged the pod")
	}
}

// newestDead is the exited instance with the highest attempt, or nil.
func newestDead(list []*cri.Container) *cri.Container {
	var newest *cri.Container
	for _, c := range list {
		if c.State == cri.ContainerState_CONTAINER_EXITED && (newest == nil || c.Metadata.Attempt > newest.Metadata.Attempt) {
			newest = c
		}
	}
	return newest
}

func exitedCount(list []*cri.Container) int {
	n := 0
	for _, c := range list {
		if c.State == cri.ContainerState_CONTAINER_EXITED {
			n++
		}
	}
	return n
}

// gcInstance is a containerd of the test's own (hack/containerd.sh INSTANCE=...), so image
// garbage collection never removes the shared instance's images.
const gcInstance = "imagegc-e2e"

var gcEndpoint = "unix:///run/nodelet-" + gcInstance + "/containerd/containerd.sock"

// TestImageGCRemovesUnusedImage runs nodelet on its own containerd holding three images: the
// sandbox image, busybox (used by a container that exists but never ran) and an unused one.
// With imageGCHighThresholdPercent 1 the disk is over the threshold, so image GC removes the
// unused image and keeps the pinned and the used ones.
func TestImageGCRemovesUnusedImage(t *testing.T) {
	images := startOwnContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sandboxID := createIdleContainer(ctx, t, images.rt, "nodelet.local/busybox:1.36")
	t.Cleanup(func() {
		ctx, cancel := criCtx()
		defer cancel()
		_, _ = images.rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: sandboxID})
		_, _ = images.rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: sandboxID})
	})
	base := t.TempDir()
	cmd := exec.Command(nodeletBin, "--root-dir="+filepath.Join(base, "root"), "--container-runtime-endpoint="+gcEndpoint,
		"--hostname-override=imagegc-node", "--healthz-port=0", "--image-gc-high-threshold=1", "--image-gc-low-threshold=0",
		"--minimum-image-ttl-duration=0s", "--cgroups-per-qos=false", "--enforce-node-allocatable=none", "--fail-swap-on=false", "-v=2")
	logPath := filepath.Join(base, "nodelet.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_, _ = cmd.Process.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("nodelet log:\n%s", tail(string(b), 6000))
		}
	}()
	testutil.WaitFor(t, 2*time.Minute, "unused image removed", func() (bool, string) {
		have := images.list(t)
		return !have["nodelet.local/gc-victim:1"], fmt.Sprint(keys(have))
	})
	have := images.list(t)
	for _, keep := range []string{"registry.k8s.io/pause:3.10", "nodelet.local/busybox:1.36"} {
		if !have[keep] {
			t.Errorf("image GC removed %s (pinned sandbox image or used by a container); left %v", keep, keys(have))
		}
	}
}

type ownContainerd struct {
	rt  cri.RuntimeServiceClient
	img cri.ImageServiceClient
}

// startOwnContainerd starts the test's containerd instance with the sandbox image, busybox
// and an image nothing uses; cleanup stops it and deletes its state.
func startOwnContainerd(t *testing.T) ownContainerd {
	t.Helper()
	env := append(os.Environ(), "INSTANCE="+gcInstance)
	script := repoPath("hack/containerd.sh")
	clean := func() {
		cmd := exec.Command(script, "clean")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("cleaning containerd %s: %v\n%s", gcInstance, err, out)
		}
	}
	clean()
	start := exec.Command(script, "start")
	start.Env = env
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("starting containerd %s: %v\n%s", gcInstance, err, out)
	}
	t.Cleanup(clean)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.MkdirAll(filepath.Join(victim, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "rootfs", "data"), []byte("unused\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tar := filepath.Join(victim, "victim.tar")
	mk := exec.Command(repoPath("_output/bin/mkimage"), "-name", "nodelet.local/gc-victim:1", "-entrypoint", "/data", "-out", tar, filepath.Join(victim, "rootfs"))
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("mkimage: %v\n%s", err, out)
	}
	socket := strings.TrimPrefix(gcEndpoint, "unix://")
	for _, file := range []string{repoPath("_output/images/pause.tar"), repoPath("_output/images/busybox.tar"), tar} {
		out, err := exec.Command("ctr", "--address", socket, "-n", "k8s.io", "images", "import", file).CombinedOutput()
		if err != nil {
			t.Fatalf("importing %s: %v\n%s (run `make images` first)", file, err, out)
		}
	}
	conn, err := grpc.NewClient(gcEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return ownContainerd{rt: cri.NewRuntimeServiceClient(conn), img: cri.NewImageServiceClient(conn)}
}

func (o ownContainerd) list(t *testing.T) map[string]bool {
	t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := o.img.ListImages(ctx, &cri.ListImagesRequest{})
	if err != nil {
		t.Fatalf("ListImages: %v", err)
	}
	have := map[string]bool{}
	for _, img := range resp.Images {
		for _, tag := range img.RepoTags {
			have[tag] = true
		}
	}
	return have
}

// createIdleContainer makes a host-network sandbox and a container of image that is created
// but never started: its image counts as in use.
func createIdleContainer(ctx context.Context, t *testing.T, rt cri.RuntimeServiceClient, image string) string {
	t.Helper()
	sbCfg := &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: "imagegc-holder", Namespace: "e2e", Uid: "imagegc-holder-uid"},
		LogDirectory: t.TempDir(),
		Linux: &cri.LinuxPodSandboxConfig{SecurityContext: &cri.LinuxSandboxSecurityContext{
			NamespaceOptions: &cri.NamespaceOption{Network: cri.NamespaceMode_NODE},
		}},
	}
	sb, err := rt.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	_, err = rt.CreateContainer(ctx, &cri.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: sbCfg, Config: &cri.ContainerConfig{
		Metadata: &cri.ContainerMetadata{Name: "idle"}, Image: &cri.ImageSpec{Image: image},
		Command: []string{"sleep", "3600"}, LogPath: "idle.log",
	}})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	return sb.PodSandboxId
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
