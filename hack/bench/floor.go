package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// floorResult is what the runtime itself allows: the bench's pods started straight through CRI.
type floorResult struct {
	single time.Duration // median RunPodSandbox → StartContainer returned, one pod at a time
	steps  podSteps      // medians of the single pod's three calls
	bursts map[int]latencies
	best   map[int]int                   // burst size → the parallelism with the shortest "all"
	search map[int]map[int]time.Duration // burst size → parallelism → "all"
	// pulls is the fastest run of plan.pullPods pods that each pull an image of their own first.
	pulls      latencies
	pullBest   int
	pullSearch map[int]time.Duration // parallelism → "all"
}

// podSteps is how long each CRI call of one pod took.
type podSteps struct{ sandbox, create, start time.Duration }

// median takes each step's median separately.
func medianSteps(all []podSteps) podSteps {
	var sb, cr, st []time.Duration
	for _, s := range all {
		sb, cr, st = append(sb, s.sandbox), append(cr, s.create), append(st, s.start)
	}
	return podSteps{newLatencies(sb, 0).pct(50), newLatencies(cr, 0).pct(50), newLatencies(st, 0).pct(50)}
}

// runFloor starts the plan's pods through CRI with no kubelet: one at a time, then each burst
// at every parallelism of the plan, keeping the fastest (the floor must be a lower bound).
func (b *bench) runFloor(ctx context.Context) (*floorResult, error) {
	logs := filepath.Join(b.o.workDir, "floor-logs")
	defer os.RemoveAll(logs)
	res := &floorResult{bursts: map[int]latencies{}, best: map[int]int{}, search: map[int]map[int]time.Duration{}}
	switch b.p.only {
	case "pulls":
		return res, b.floorPulls(ctx, res)
	case "dra":
		return res, nil // no kubelet, no DRA
	}
	var ds []time.Duration
	var steps []podSteps
	for i := 0; i < b.p.singles && b.p.only == ""; i++ {
		l, s, err := b.floorRun(ctx, fmt.Sprintf("single%d", i), 1, 1, nil)
		if err != nil {
			return nil, err
		}
		ds, steps = append(ds, l.all), append(steps, s...)
	}
	res.single, res.steps = newLatencies(ds, 0).pct(50), medianSteps(steps)
	progress("floor", "one pod: median %v of %d (RunPodSandbox %v, CreateContainer %v, StartContainer %v)",
		ms(res.single), len(ds), ms(res.steps.sandbox), ms(res.steps.create), ms(res.steps.start))
	for _, n := range b.p.bursts {
		res.search[n] = map[int]time.Duration{}
		for _, par := range b.p.floorParallels {
			l, _, err := b.floorRun(ctx, fmt.Sprintf("burst%d-par%d", n, par), n, par, nil)
			if err != nil {
				return nil, err
			}
			res.search[n][par] = l.all
			progress("floor", "%d-pod burst, %d at a time: p50 %v, p90 %v, p99 %v, all %v", n, par, ms(l.pct(50)), ms(l.pct(90)), ms(l.pct(99)), ms(l.all))
			if best, ok := res.bursts[n]; !ok || l.all < best.all {
				res.bursts[n], res.best[n] = l, par
			}
		}
	}
	if b.p.only == "bursts" {
		return res, nil
	}
	return res, b.floorPulls(ctx, res)
}

// floorPulls starts plan.pullPods pods whose images the runtime does not hold, at every
// parallelism of the plan below pullPods and all at once, keeping the fastest "all". Each pod
// pulls its image side by side with its RunPodSandbox (nothing orders them; a kubelet could do
// the same), then creates and starts its container.
func (b *bench) floorPulls(ctx context.Context, res *floorResult) error {
	n := b.p.pullPods
	if n == 0 {
		return nil
	}
	res.pullSearch = map[int]time.Duration{}
	pars := []int{}
	for _, par := range b.p.floorParallels {
		if par < n {
			pars = append(pars, par)
		}
	}
	for _, par := range append(pars, n) {
		if err := b.removePullImages(ctx); err != nil {
			return err
		}
		l, _, err := b.floorRun(ctx, fmt.Sprintf("pull-par%d", par), n, par, pullImage)
		if err != nil {
			return err
		}
		res.pullSearch[par] = l.all
		progress("floor", "%d pods pulling an image each, %d at a time: p50 %v, p99 %v, all %v", n, par, ms(l.pct(50)), ms(l.pct(99)), ms(l.all))
		if res.pullBest == 0 || l.all < res.pulls.all {
			res.pulls, res.pullBest = l, par
		}
	}
	return b.removePullImages(ctx)
}

// floorRun starts n pods, par at a time, timing each from its own first CRI call to its
// container started (as the kubelets' pods are timed from their own create call) and the
// whole run from its start, then removes them. With imageOf, pod i pulls imageOf(i) and runs it;
// otherwise every pod runs the test helper, which the runtime holds.
func (b *bench) floorRun(ctx context.Context, run string, n, par int, imageOf func(int) string) (latencies, []podSteps, error) {
	var mu sync.Mutex
	var sandboxes []string
	ds := make([]time.Duration, n)
	steps := make([]podSteps, n)
	errs := make([]error, n)
	meter := startCPUMeter() // before the clock starts: its /proc scan is not the pods' time
	start := time.Now()
	forEach(n, par, func(i int) {
		t0 := time.Now()
		img, pull := image, imageOf != nil
		if pull {
			img = imageOf(i)
		}
		id, err := b.floorPod(ctx, fmt.Sprintf("%s-%03d", run, i), img, pull, &steps[i])
		ds[i] = time.Since(t0)
		errs[i] = err
		if id != "" {
			mu.Lock()
			sandboxes = append(sandboxes, id)
			mu.Unlock()
		}
	})
	all, cpu := time.Since(start), meter.done()
	if err := errors.Join(errs...); err != nil {
		_ = b.removeSandboxes(ctx, sandboxes)
		return latencies{}, nil, fmt.Errorf("floor %s: %w", run, err)
	}
	l := newLatencies(ds, all)
	l.cpu = &cpu
	return l, steps, b.removeSandboxes(ctx, sandboxes)
}

// floorPod runs a sandbox and one sleeping container of img in it, configured as a kubelet
// would (metadata, labels, hostname, log directory and path), timing each call. With pull, img
// is pulled while the sandbox starts.
func (b *bench) floorPod(ctx context.Context, name, img string, pull bool, steps *podSteps) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ns := nsPrefix + "floor"
	uid := fmt.Sprintf("floor-%d-%s", time.Now().UnixNano(), name)
	logDir := filepath.Join(b.o.workDir, "floor-logs", name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return "", err
	}
	sbCfg := &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: name, Namespace: ns, Uid: uid},
		Hostname:     name,
		LogDirectory: logDir,
		Labels:       map[string]string{labelNode: nodeName, labelPodNS: ns, labelPodUID: uid, "io.kubernetes.pod.name": name},
		Linux: &cri.LinuxPodSandboxConfig{SecurityContext: &cri.LinuxSandboxSecurityContext{
			NamespaceOptions: &cri.NamespaceOption{Network: cri.NamespaceMode_POD, Pid: cri.NamespaceMode_CONTAINER, Ipc: cri.NamespaceMode_POD}}},
	}
	pulled := make(chan error, 1)
	if pull {
		go func() {
			_, err := cri.NewImageServiceClient(b.conn).PullImage(cctx, &cri.PullImageRequest{Image: &cri.ImageSpec{Image: img}, SandboxConfig: sbCfg})
			pulled <- err
		}()
	} else {
		pulled <- nil
	}
	t := time.Now()
	sb, err := b.rt.RunPodSandbox(cctx, &cri.RunPodSandboxRequest{Config: sbCfg})
	steps.sandbox = time.Since(t)
	pullErr := <-pulled
	if err != nil {
		return "", fmt.Errorf("run sandbox %s: %w", name, err)
	}
	if pullErr != nil {
		return sb.PodSandboxId, fmt.Errorf("pull %s for %s: %w", img, name, pullErr)
	}
	t = time.Now()
	ctr, err := b.rt.CreateContainer(cctx, &cri.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId,
		Config: &cri.ContainerConfig{
			Metadata: &cri.ContainerMetadata{Name: "c"},
			Image:    &cri.ImageSpec{Image: img},
			Args:     floorArgs(pull),
			LogPath:  "c/0.log",
			Labels:   map[string]string{labelPodNS: ns, labelPodUID: uid, "io.kubernetes.container.name": "c"},
		},
		SandboxConfig: sbCfg,
	})
	steps.create = time.Since(t)
	if err != nil {
		return sb.PodSandboxId, fmt.Errorf("create container in %s: %w", name, err)
	}
	t = time.Now()
	_, err = b.rt.StartContainer(cctx, &cri.StartContainerRequest{ContainerId: ctr.ContainerId})
	steps.start = time.Since(t)
	if err != nil {
		return sb.PodSandboxId, fmt.Errorf("start container in %s: %w", name, err)
	}
	return sb.PodSandboxId, nil
}

// floorArgs are the container's arguments: the test helper's sleep command, or for the pull
// images (busybox with "sleep 3600" as their command) none.
func floorArgs(pull bool) []string {
	if pull {
		return nil
	}
	return []string{"sleep"}
}
