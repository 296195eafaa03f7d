package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var errTimeout = errors.New("timed out")

// latencies are per-pod start times of one run, sorted, and the run's total.
type latencies struct {
	sorted []time.Duration
	all    time.Duration // first creation (or start) → last pod Running
	cpu    *cpuUse       // where the machine's CPU went meanwhile (bursts and pulls)
	// refused are the pods the kubelet failed once and retried later, which the times include:
	// in a pull burst those whose pull its own rate limit refused (an image pull back-off), in
	// the DRA burst those whose claims it failed to prepare (FailedPrepareDynamicResources).
	refused int
}

func newLatencies(ds []time.Duration, all time.Duration) latencies {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return latencies{sorted: ds, all: all}
}

// pct is the nearest-rank percentile.
func (l latencies) pct(p int) time.Duration {
	if len(l.sorted) == 0 {
		return 0
	}
	i := (len(l.sorted)*p + 99) / 100
	return l.sorted[max(i-1, 0)]
}

// podWatch records when a watch first saw each pod of one run satisfy cond.
type podWatch struct {
	mu   sync.Mutex
	cond func(*v1.Pod) bool
	seen map[string]time.Time
	last map[string]*v1.Pod
	stop context.CancelFunc
}

func isRunning(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }

// watchRun starts a watch on the pods labelled with run; start it before creating them.
func (b *bench) watchRun(ctx context.Context, ns, run string, cond func(*v1.Pod) bool) (*podWatch, error) {
	sel := runLabel + "=" + run
	pods := b.kube.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &podWatch{cond: cond, seen: map[string]time.Time{}, last: map[string]*v1.Pod{}, stop: cancel}
	go w.loop(wctx, pods, sel, list.ResourceVersion)
	return w, nil
}

// loop re-opens the watch where it left off whenever the API server closes it.
func (w *podWatch) loop(ctx context.Context, pods corev1.PodInterface, sel, rv string) {
	for ctx.Err() == nil {
		wi, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			_ = sleep(ctx, 100*time.Millisecond)
			continue
		}
		rv = w.drain(wi, rv)
		wi.Stop()
	}
}

// drain consumes one watch until it ends and returns the resourceVersion to resume from.
func (w *podWatch) drain(wi watch.Interface, rv string) string {
	for ev := range wi.ResultChan() {
		now := time.Now()
		if ev.Type == watch.Error {
			return "" // e.g. 410 Gone: resume from the current state
		}
		p, ok := ev.Object.(*v1.Pod)
		if !ok {
			continue
		}
		rv = p.ResourceVersion
		if ev.Type == watch.Bookmark || ev.Type == watch.Deleted {
			continue
		}
		w.mu.Lock()
		w.last[p.Name] = p
		if _, done := w.seen[p.Name]; !done && w.cond(p) {
			w.seen[p.Name] = now
		}
		w.mu.Unlock()
	}
	return rv
}

func (w *podWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

func (w *podWatch) get(name string) (time.Time, *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[name], w.last[name]
}

// wait waits until n pods were seen, printing progress every 2s.
func (b *bench) wait(ctx context.Context, subject, what string, w *podWatch, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	lastPrint := time.Now()
	for w.count() < n {
		if err := b.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s: only %d of %d pods after %v: %w", subject, what, w.count(), n, timeout, errTimeout)
		}
		if n > 1 && time.Since(lastPrint) >= 2*time.Second {
			progress(subject, "%s %d/%d Running", what, w.count(), n)
			lastPrint = time.Now()
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// runRecord is what the bench saw of one run's pods, by name.
type runRecord struct {
	created map[string]time.Time // the create call was sent
	seen    map[string]time.Time // a watch first saw it Running
	byUID   map[string]string    // pod UID → name
}

// launch creates n sleeping pods labelled run and returns each one's creation → Running time
// as the watch saw it; what names the run in progress lines. The pods stay; on a timeout the
// latencies cover those that made it.
func (b *bench) launch(ctx context.Context, subject, ns, run, what string, n int, timeout time.Duration) (latencies, *runRecord, error) {
	build := func(i int) *v1.Pod {
		return benchPod(fmt.Sprintf("%s-%03d", run, i), run, v1.RestartPolicyAlways, "sleep")
	}
	return b.launchPods(ctx, subject, ns, run, what, n, build, timeout)
}

// launchPods is launch with the pods build makes.
func (b *bench) launchPods(ctx context.Context, subject, ns, run, what string, n int, build func(i int) *v1.Pod, timeout time.Duration) (latencies, *runRecord, error) {
	w, err := b.watchRun(ctx, ns, run, isRunning)
	if err != nil {
		return latencies{}, nil, err
	}
	defer w.stop()
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = build(i)
	}
	meter := startCPUMeter() // before the clock starts: its /proc scan is not the pods' time
	start := time.Now()
	created, err := b.createPods(ctx, ns, pods)
	if err != nil {
		return latencies{}, nil, fmt.Errorf("%s: create %s pods: %w", subject, run, err)
	}
	waitErr := b.wait(ctx, subject, what, w, n, timeout)
	cpu := meter.done()
	rec := &runRecord{created: created, seen: map[string]time.Time{}, byUID: map[string]string{}}
	var ds []time.Duration
	var last time.Time
	for name, t0 := range created {
		seen, pod := w.get(name)
		if pod != nil {
			rec.byUID[string(pod.UID)] = name
		}
		if !seen.IsZero() {
			rec.seen[name] = seen
			ds = append(ds, seen.Sub(t0))
			if seen.After(last) {
				last = seen
			}
		}
	}
	l := newLatencies(ds, last.Sub(start))
	l.cpu = &cpu
	return l, rec, waitErr
}

// singles starts one pod at a time on the otherwise idle node; returns the median.
func (b *bench) singles(ctx context.Context, subject, ns string) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < b.p.singles; i++ {
		run := fmt.Sprintf("single%d", i)
		l, _, err := b.launch(ctx, subject, ns, run, "one pod", 1, time.Minute)
		if err != nil {
			return 0, err
		}
		ds = append(ds, l.all)
		if err := b.deleteRun(ctx, subject, ns, run, 1); err != nil {
			return 0, err
		}
	}
	med := newLatencies(ds, 0).pct(50)
	progress(subject, "one pod on an idle node: median %v of %d", med.Round(time.Millisecond), len(ds))
	return med, nil
}

// burst starts n pods at once; for plan.breakdownBurst it also records where each pod's
// time went.
func (b *bench) burst(ctx context.Context, subject, ns string, n int, r *subjectResult) (latencies, error) {
	run := fmt.Sprintf("burst%d", n)
	l, rec, err := b.launch(ctx, subject, ns, run, fmt.Sprintf("%d-pod burst", n), n, time.Minute+time.Duration(n)*2*time.Second)
	if err != nil {
		return l, err
	}
	progress(subject, "%d-pod burst: p50 %v, p90 %v, p99 %v, all %v", n, ms(l.pct(50)), ms(l.pct(90)), ms(l.pct(99)), ms(l.all))
	if n == b.p.breakdownBurst {
		if r.breakdown, err = b.timelines(ctx, rec); err != nil {
			return l, fmt.Errorf("%s: read the runtime's stamps: %w", subject, err)
		}
		med, tail := timelineSummary(r.breakdown)
		progress(subject, "%d-pod burst timeline (median pod / slowest 5%%): %v / %v", n, msList(med), msList(tail))
	}
	return l, b.deleteRun(ctx, subject, ns, run, n)
}

func msList(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = ms(d)
	}
	return out
}

// restartResult is the median first restart of a crashing container.
type restartResult struct {
	runtime time.Duration // runtime finishedAt → new container's startedAt (CRI, ns resolution)
	api     time.Duration // the same from the API status (lastState/state: 1s resolution)
	watch   time.Duration // runtime finishedAt → Running again seen by a watch
}

// restarts runs a container that exits 1 after 3s under restartPolicy Always and times its
// first restart, once per plan.restarts.
func (b *bench) restarts(ctx context.Context, subject, ns string) (restartResult, error) {
	var rt, api, seen []time.Duration
	for i := 0; i < b.p.restarts; i++ {
		r, err := b.restartOnce(ctx, subject, ns, fmt.Sprintf("restart%d", i))
		if err != nil {
			return restartResult{}, err
		}
		rt, api, seen = append(rt, r.runtime), append(api, r.api), append(seen, r.watch)
	}
	res := restartResult{runtime: newLatencies(rt, 0).pct(50), api: newLatencies(api, 0).pct(50), watch: newLatencies(seen, 0).pct(50)}
	progress(subject, "first restart: finishedAt → startedAt %v (API %v), death → Running seen %v",
		ms(res.runtime), res.api, ms(res.watch))
	return res, nil
}

func (b *bench) restartOnce(ctx context.Context, subject, ns, run string) (restartResult, error) {
	restarted := func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1 && cs[0].State.Running != nil
	}
	w, err := b.watchRun(ctx, ns, run, restarted)
	if err != nil {
		return restartResult{}, err
	}
	defer w.stop()
	pod := benchPod(run+"-0", run, v1.RestartPolicyAlways, "exit", "--code", "1", "--after", "3s")
	if _, err := b.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return restartResult{}, err
	}
	if err := b.wait(ctx, subject, "first restart", w, 1, 90*time.Second); err != nil {
		return restartResult{}, err
	}
	seen, p := w.get(pod.Name)
	finished, started, err := b.runtimeRestart(ctx, string(p.UID))
	if err != nil {
		return restartResult{}, fmt.Errorf("%s: %w", subject, err)
	}
	cs := p.Status.ContainerStatuses[0]
	var api time.Duration
	if t := cs.LastTerminationState.Terminated; t != nil {
		api = cs.State.Running.StartedAt.Sub(t.FinishedAt.Time)
	}
	r := restartResult{runtime: started.Sub(finished), api: api, watch: seen.Sub(finished)}
	return r, b.deleteRun(ctx, subject, ns, run, 1)
}

// runtimeRestart reads, from the runtime, when the pod's first container instance finished
// and when the second one started.
func (b *bench) runtimeRestart(ctx context.Context, uid string) (finished, started time.Time, err error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := b.rt.ListContainers(cctx, &cri.ListContainersRequest{Filter: &cri.ContainerFilter{
		LabelSelector: map[string]string{labelPodUID: uid}}})
	if err != nil {
		return finished, started, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	for _, c := range resp.Containers {
		st, err := b.rt.ContainerStatus(cctx, &cri.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil {
			return finished, started, err
		}
		switch {
		case c.Metadata.Attempt == 0 && st.Status.FinishedAt > 0:
			finished = time.Unix(0, st.Status.FinishedAt)
		case c.Metadata.Attempt == 1 && st.Status.StartedAt > 0:
			started = time.Unix(0, st.Status.StartedAt)
		}
	}
	if finished.IsZero() || started.IsZero() {
		return finished, started, fmt.Errorf("runtime lacks attempt 0 or 1 of pod %s's container", uid)
	}
	return finished, started, nil
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
