package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/hack/kerneltunables"
)

// subject is a kubelet under test and how to start it as the bench node.
type subject struct {
	name   string // in progress lines and the report
	short  string // namespace, log and directory names
	bin    string
	root   string // its --root-dir
	args   func(kubeconfig string) []string
	before func(context.Context) error // a last check before it starts
	guard  bool                        // the upstream kubelet: killed when a foreign pod appears
}

// subjectResult holds one kubelet's figures of one round; zero values mean "not measured".
type subjectResult struct {
	single    time.Duration // median creation → Running of one pod on an idle node
	bursts    map[int]latencies
	csi       latencies     // plan.csiPods pods with a CSI volume each
	dra       latencies     // plan.draPods pods with a DRA claim each
	pulls     latencies     // plan.pullPods pods pulling an image of their own each
	breakdown []podTimeline // plan.breakdownBurst's pods, where each one's time went
	restart   restartResult
	idle      footprint
	loaded    footprint
	density   *densityResult
	api       apiLoad // last round
}

// scope says which figures a run takes beyond the footprint and the latencies. Every run
// takes the latencies before its loaded footprint, also where only the footprint is reported
// (the second configurations): a heap grown by the bursts stays partly mapped, so figures
// compared with each other need the same history.
type scope struct {
	density bool // the long density run and the API request count (last round)
}

// runSubject starts the kubelet as a freshly registered bench node, takes the figures of
// the scope under the machine guard, and leaves the node, its pods and its sandboxes removed.
func (b *bench) runSubject(ctx context.Context, rd *round, r int, s *subject, sc scope) (*subjectResult, error) {
	if err := b.resetNode(ctx); err != nil {
		return nil, err
	}
	kubeconfig, err := nodeKubeconfig()
	if err != nil {
		return nil, err
	}
	_ = os.RemoveAll(s.root)
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return nil, err
	}
	if s.before != nil {
		if err := s.before(ctx); err != nil {
			return nil, err
		}
	}
	ns, err := b.createNamespace(ctx, s.short)
	if err != nil {
		return nil, err
	}
	defer kerneltunables.Save()() // both kubelets rewrite them at start-up
	var res *subjectResult
	var running atomic.Pointer[process]
	var onForeign func(string) // nodelet: only flag the run
	if s.guard {
		onForeign = func(foreign string) {
			if p := running.Load(); p != nil {
				p.kill(fmt.Errorf("a sandbox the bench did not create appeared while the upstream kubelet ran (%s); "+
					"killed the kubelet to spare it", foreign))
			}
		}
	}
	err = b.guarded(ctx, rd, r, s.name, onForeign, func() error {
		logPath := filepath.Join(b.o.workDir, s.short+".log")
		progress(s.name, "starting %s as node %s (log %s)", s.bin, nodeName, logPath)
		started := time.Now()
		p, err := startProcess(s.name, s.bin, s.args(kubeconfig), logPath)
		if err != nil {
			return err
		}
		running.Store(p)
		b.cur = p
		defer b.finish(ctx, s, p, ns)
		res, err = b.measure(ctx, s.name, s.root, ns, p, started, sc)
		return err
	})
	return res, err
}

// measure takes the figures in an order that keeps each one's starting state clean.
func (b *bench) measure(ctx context.Context, subject, root, ns string, p *process, started time.Time, sc scope) (*subjectResult, error) {
	if err := b.waitNodeReady(ctx, subject, started, 2*time.Minute); err != nil {
		return nil, err
	}
	r := &subjectResult{bursts: map[int]latencies{}}
	var err error
	switch b.p.only {
	case "pulls":
		r.pulls, err = b.pullBurst(ctx, subject, ns)
		return r, err
	case "dra":
		r.dra, err = b.draBurst(ctx, subject, ns, root)
		return r, err
	case "bursts":
		for _, n := range b.p.bursts {
			if r.bursts[n], err = b.burst(ctx, subject, ns, n, r); err != nil {
				return nil, err
			}
		}
		return r, nil
	}
	if err = sleep(ctx, b.p.settle); err != nil {
		return nil, err
	}
	if r.idle, err = b.footprint(ctx, subject, p.pid(), 0); err != nil {
		return nil, err
	}
	if err := b.latencies(ctx, subject, root, ns, r); err != nil {
		return nil, err
	}
	if r.loaded, err = b.loadedFootprint(ctx, subject, ns, p.pid()); err != nil {
		return nil, err
	}
	if sc.density && b.p.apiWindow > 0 {
		if r.api, err = b.apiRequests(ctx, subject, ns); err != nil {
			return nil, err
		}
	}
	if sc.density && b.p.densityPods > 0 {
		if r.density, err = b.density(ctx, subject, ns); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// latencies takes the one-pod, restart, burst, CSI, DRA and pull burst figures.
func (b *bench) latencies(ctx context.Context, subject, root, ns string, r *subjectResult) error {
	var err error
	if r.single, err = b.singles(ctx, subject, ns); err != nil {
		return err
	}
	if r.restart, err = b.restarts(ctx, subject, ns); err != nil {
		return err
	}
	for _, n := range b.p.bursts {
		if r.bursts[n], err = b.burst(ctx, subject, ns, n, r); err != nil {
			return err
		}
	}
	if b.p.csiPods > 0 {
		if r.csi, err = b.csiBurst(ctx, subject, ns, root); err != nil {
			return err
		}
	}
	if b.p.draPods > 0 {
		if r.dra, err = b.draBurst(ctx, subject, ns, root); err != nil {
			return err
		}
	}
	if b.p.pullPods > 0 {
		r.pulls, err = b.pullBurst(ctx, subject, ns)
	}
	return err
}

// finish lets the kubelet remove what is left, stops it, then clears the node, the namespace
// and the runtime. It runs even when the bench was interrupted.
func (b *bench) finish(ctx context.Context, s *subject, p *process, ns string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if p.exited() == nil {
		progress(s.name, "cleaning up")
		if err := b.deleteAll(cctx, s.name, ns); err != nil {
			fmt.Fprintln(os.Stderr, "bench: cleanup:", err)
		}
	}
	p.stop()
	b.cur = nil
	zero := int64(0)
	_ = b.kube.CoreV1().Pods(ns).DeleteCollection(cctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	_ = b.kube.CoreV1().Namespaces().Delete(cctx, ns, metav1.DeleteOptions{})
	if err := b.removeOwnSandboxes(cctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench: cleanup:", err)
	}
	if err := b.kube.CoreV1().Nodes().Delete(cctx, nodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintln(os.Stderr, "bench: cleanup:", err)
	}
}

// deleteAll deletes every pod of ns gracefully and waits for the kubelet to finish them.
func (b *bench) deleteAll(ctx context.Context, subject, ns string) error {
	if err := b.kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	return b.poll(ctx, 3*time.Minute, func() (bool, error) {
		pods, err := b.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
}

// waitNodeReady waits for a Node registered after started (creation times have whole seconds)
// to report Ready.
func (b *bench) waitNodeReady(ctx context.Context, subject string, started time.Time, timeout time.Duration) error {
	start := time.Now()
	err := b.poll(ctx, timeout, func() (bool, error) {
		node, err := b.kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		fresh := err == nil && !node.CreationTimestamp.Time.Before(started.Truncate(time.Second))
		return fresh && nodeReady(node), err
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready: %w", nodeName, err)
	}
	progress(subject, "node %s Ready after %v", nodeName, time.Since(start).Round(100*time.Millisecond))
	return nil
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
