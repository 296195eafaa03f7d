package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	pullRun = "pull"
	// The images live under registry.k8s.io, whose mirror in the project containerd is the
	// project registry (the distribution registry, hack/images.sh push): the pulls cross a real
	// HTTP registry on loopback.
	pullRepo     = "registry.k8s.io/nlbench/pull"
	registryAddr = "127.0.0.1:5000"
	pullLayerMiB = 4 // random bytes per image, so no two images share a layer
	// pullBurstLimit is registryBurst for the subjects that pull in parallel: the default (10)
	// would refuse half of the 20 pulls started at once ("pull QPS exceeded", then back-off).
	pullBurstLimit = 20
	// pullRefusal is the error of a pull past registryPullQPS and registryBurst; the pod then
	// backs off (10 s at first) before the kubelet tries again.
	pullRefusal = "pull QPS exceeded"
)

func pullImage(i int) string { return fmt.Sprintf("%s-%02d:v1", pullRepo, i) }

// pullBurst creates plan.pullPods pods at once, each with an image of its own the runtime does
// not hold, and times each from its create call to Running: the pulls (with the kubelet's own
// serialisation and registry QPS) dominate. The images are removed again when it returns.
func (b *bench) pullBurst(ctx context.Context, subject, ns string) (latencies, error) {
	n := b.p.pullPods
	if err := b.removePullImages(ctx); err != nil {
		return latencies{}, err
	}
	build := func(i int) *v1.Pod {
		p := benchPod(fmt.Sprintf("%s-%03d", pullRun, i), pullRun, v1.RestartPolicyAlways)
		p.Spec.Containers[0].Image = pullImage(i)
		return p
	}
	what := fmt.Sprintf("%d pods pulling an image each", n)
	l, _, err := b.launchPods(ctx, subject, ns, pullRun, what, n, build, 2*time.Minute+time.Duration(n)*5*time.Second)
	if err != nil {
		return l, err
	}
	if l.refused, err = b.podsWithEvent(ctx, ns, pullRun, func(e v1.Event) bool { return strings.Contains(e.Message, pullRefusal) }); err != nil {
		return l, err
	}
	progress(subject, "%s: p50 %v, p99 %v, all %v; %d pods refused with %q", what, ms(l.pct(50)), ms(l.pct(99)), ms(l.all), l.refused, pullRefusal)
	if err := b.deleteRun(ctx, subject, ns, pullRun, n); err != nil {
		return l, err
	}
	return l, b.removePullImages(ctx)
}

// podsWithEvent counts the run's pods (named RUN-…) with at least one event that match says is
// the one sought. Events outlive their pods, so it may run after the pods are gone.
func (b *bench) podsWithEvent(ctx context.Context, ns, run string, match func(v1.Event) bool) (int, error) {
	events, err := b.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing the %s run's events: %w", run, err)
	}
	pods := map[string]bool{}
	for _, e := range events.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, run+"-") && match(e) {
			pods[e.InvolvedObject.Name] = true
		}
	}
	return len(pods), nil
}

// removePullImages removes the bench's pull images from the runtime (containerd deletes their
// content with them), so the next pull has to fetch every layer.
func (b *bench) removePullImages(ctx context.Context) error {
	images := cri.NewImageServiceClient(b.conn)
	for i := range b.p.pullPods {
		spec := &cri.ImageSpec{Image: pullImage(i)}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := images.ImageStatus(cctx, &cri.ImageStatusRequest{Image: spec})
		if err == nil && st.Image != nil {
			_, err = images.RemoveImage(cctx, &cri.RemoveImageRequest{Image: &cri.ImageSpec{Image: st.Image.Id}})
		}
		cancel()
		if err != nil {
			return fmt.Errorf("remove %s from the runtime: %w", pullImage(i), err)
		}
	}
	return nil
}

// preparePulls builds plan.pullPods images (busybox plus pullLayerMiB of random bytes each) and
// pushes them to the project registry (hack/images.sh push starts it; `make bench` runs that),
// then makes sure the runtime does not hold them.
func (b *bench) preparePulls(ctx context.Context) error {
	if b.p.pullPods == 0 {
		return nil
	}
	if !registryServes(ctx, "", "") {
		return fmt.Errorf("the project registry does not answer on %s: run hack/images.sh push (make bench does)", registryAddr)
	}
	dir := filepath.Join(b.o.workDir, "pull-images")
	bin := filepath.Dir(b.o.nodeletBin)
	progress("bench", "building and pushing %d images of %d MiB each for the pull figure", b.p.pullPods, pullLayerMiB)
	for i := range b.p.pullPods {
		tar, err := buildPullImage(filepath.Join(bin, "mkimage"), dir, i)
		if err != nil {
			return err
		}
		dst := registryAddr + strings.TrimPrefix(pullImage(i), "registry.k8s.io")
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "regtool"), "push", "-tar", tar, "-src", pullImage(i), "-dst", dst).CombinedOutput()
		if err != nil {
			return fmt.Errorf("push %s to the project registry (make registries builds regtool): %w: %s", pullImage(i), err, out)
		}
		if !registryServes(ctx, strings.TrimPrefix(pullRepo, "registry.k8s.io/")+fmt.Sprintf("-%02d", i), "v1") {
			return fmt.Errorf("the project registry on %s does not serve %s after the push", registryAddr, dst)
		}
	}
	return b.removePullImages(ctx)
}

// buildPullImage writes image i's root filesystem (busybox, random bytes seeded by i) and
// packs it with hack/mkimage; it returns the archive.
func buildPullImage(mkimage, dir string, i int) (string, error) {
	rootfs := filepath.Join(dir, fmt.Sprintf("rootfs-%02d", i))
	if err := os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755); err != nil {
		return "", err
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return "", fmt.Errorf("the pull images are built on busybox (make deps installs busybox-static): %w", err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), busybox, 0o755); err != nil {
		return "", err
	}
	filler := make([]byte, pullLayerMiB<<20)
	rng := rand.New(rand.NewPCG(uint64(i), 0x6e6c62656e6368)) // "nlbench"
	for j := 0; j+8 <= len(filler); j += 8 {
		v := rng.Uint64()
		for k := range 8 {
			filler[j+k] = byte(v >> (8 * k))
		}
	}
	if err := os.WriteFile(filepath.Join(rootfs, "filler"), filler, 0o644); err != nil {
		return "", err
	}
	tar := filepath.Join(dir, fmt.Sprintf("pull-%02d.tar", i))
	out, err := exec.Command(mkimage, "-name", pullImage(i), "-entrypoint", "/bin/busybox", "-cmd", "sleep", "-cmd", "3600",
		"-out", tar, rootfs).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s (make images builds it): %w: %s", mkimage, err, out)
	}
	return tar, nil
}

// registryServes reports whether the local registry answers for repository name's tag (or,
// with an empty name, answers at all).
func registryServes(ctx context.Context, name, tag string) bool {
	url := "http://" + registryAddr + "/v2/"
	if name != "" {
		url += name + "/manifests/" + tag
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodHead, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// socketPath is the filesystem path of a unix:// CRI endpoint.
func socketPath(endpoint string) string {
	const scheme = "unix://"
	if len(endpoint) > len(scheme) && endpoint[:len(scheme)] == scheme {
		return endpoint[len(scheme):]
	}
	return endpoint
}
