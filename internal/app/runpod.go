package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/admission"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pleg"
	"github.com/nodelet/nodelet/internal/podrun"
	"github.com/nodelet/nodelet/internal/podworkers"
	"github.com/nodelet/nodelet/internal/source"
	"github.com/nodelet/nodelet/internal/syncloop"
	"github.com/nodelet/nodelet/internal/timeline"
)

// podStatePoll is how often a foreground pod's worker state is looked at while waiting.
const podStatePoll = 100 * time.Millisecond

// RunPod runs one pod in this process (`nodelet run --wait`) with the daemon's machinery —
// sync loop, pod workers, PLEG, probes, volumes, hooks, restarts with back-off, log rotation —
// and nothing node-wide: no other pod source, no housekeeping of the runtime's other pods, no
// garbage collection, eviction or node shutdown, and no listener (kubelet API, read-only port,
// healthz, node page, device plugins), so it runs beside anything else on the node.
//
// drive is called once the pod is handed to the sync loop. The machinery keeps running until
// drive returns, also after ctx ends (drive then stops the pod): drive must stop and remove
// the pod. drive's context ends with ctx, or with the error of a component that failed.
func RunPod(ctx context.Context, cfg *config.Config, pod *v1.Pod, drive func(context.Context, podrun.Pod) error) error {
	if cfg.Kubeconfig != "" {
		return errors.New("a pod run in the foreground has no API server: drop --kubeconfig, or run without --wait to hand the pod to the daemon")
	}
	comps := newComponents(context.WithoutCancel(ctx))
	// Until the pod is handed over there is nothing to stop gracefully: a signal while
	// building (e.g. waiting for the runtime) ends the run at once.
	interruptBuild := context.AfterFunc(ctx, comps.cancel)
	n, err := build(comps.ctx, cfg, comps, asForeground)
	if !interruptBuild() {
		err = fmt.Errorf("stopped before the pod started: %w", context.Cause(ctx))
	}
	if err == nil {
		err = n.drivePod(ctx, pod, drive)
	}
	comps.cancel()
	if werr := comps.wait(); err == nil {
		err = werr
	}
	return err
}

// drivePod starts the pod's source and loop and hands the pod to drive.
func (n *agent) drivePod(ctx context.Context, pod *v1.Pod, drive func(context.Context, podrun.Pod) error) error {
	n.merger = source.NewMerger()
	single := source.NewSinglePod(pod, n.merger.Channel(source.FileSource))
	n.sources = []string{source.FileSource}
	n.comps.loop("pod source", single.Run)
	n.comps.loop("merger", n.merger.Run)
	workers := n.startPodLoop()
	if err := n.startLogRotation(podrun.LogDir(strOr(&n.cfg.Kubelet.PodLogsDir, "/var/log/pods"), pod)); err != nil {
		return err
	}
	driveCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopDrive := context.AfterFunc(n.comps.ctx, func() { cancel(n.stopped()) })
	defer stopDrive()
	return drive(driveCtx, &foregroundPod{n: n, pod: pod, source: single, workers: workers})
}

// startPodLoop starts the PLEG, the pod workers and the sync loop for the foreground pod.
func (n *agent) startPodLoop() *podworkers.PodWorkers {
	kc := n.cfg.Kubelet
	relister := pleg.New(n.runtime, plegPeriod)
	queue := syncloop.NewQueue()
	workers := podworkers.New(n.comps.ctx, n.syncer, queue, kc.SyncFrequency.Duration)
	workers.SetRecorder(n.recorder)
	admit := &admission.Admitter{MaxPods: int(maxPods(kc)), Statuses: n.statuses, AllowedUnsafeSysctls: kc.AllowedUnsafeSysctls, Node: n.node, Recorder: n.recorder, RuntimeFeatures: n.features}
	// Never ready: housekeeping would remove every other pod of this node in the runtime, and
	// the volume manager their volumes.
	sourcesReady := func() bool { return false }
	loop := syncloop.New(syncloop.Config{
		NodeName: n.cfg.NodeName,
		Updates:  n.merger.Updates(), Events: relister.Events(), RunningPods: relister.RunningPods,
		SourcesReady: sourcesReady,
		Pods:         n.pods, Workers: workers, Queue: queue, Admit: admit,
		ProbeUpdates: n.prober.Updates(), Timeline: n.timeline,
	})
	n.podStates.wire(n, workers, relister, sourcesReady)
	n.comps.start("volume manager", n.volumes.Run)
	n.comps.loop("pleg", relister.Run)
	n.comps.loop("exit events", func(ctx context.Context) { watchExits(ctx, n.cri, relister.Trigger) })
	n.comps.loop("sync loop", loop.Run)
	n.comps.loop("pod workers", func(ctx context.Context) { <-ctx.Done(); workers.Wait() })
	return workers
}

// logsUnder is the runtime's log service limited to the containers logging under dir.
type logsUnder struct {
	container.LogService
	dir string
}

func (l logsUnder) RunningContainerLogs(ctx context.Context) ([]*container.ContainerLog, error) {
	all, err := l.LogService.RunningContainerLogs(ctx)
	var mine []*container.ContainerLog
	for _, c := range all {
		if strings.HasPrefix(c.Path, l.dir) {
			mine = append(mine, c)
		}
	}
	return mine, err
}

// stopped is why the machinery stopped before drive returned.
func (n *agent) stopped() error {
	return fmt.Errorf("nodelet stopped: %w", context.Cause(n.comps.ctx))
}

// foregroundPod is podrun.Pod for the pod RunPod runs.
type foregroundPod struct {
	n       *agent
	pod     *v1.Pod
	source  *source.SinglePod
	workers *podworkers.PodWorkers
}

func (p *foregroundPod) Status() (v1.PodStatus, bool) { return p.n.statuses.Get(p.pod.UID) }

func (p *foregroundPod) Timeline() (timeline.Timeline, bool) {
	return p.n.timeline.Get(p.pod.Namespace, p.pod.Name)
}

// Done: the worker finished the pod (terminated, or removed), or admission refused it (no
// worker, status Failed).
func (p *foregroundPod) Done() bool {
	if state, ok := p.workers.State(p.pod.UID); ok {
		return state == podworkers.Terminated
	}
	if _, removed := p.workers.FinishedAt(p.pod.UID); removed {
		return true
	}
	st, ok := p.Status()
	return ok && (st.Phase == v1.PodFailed || st.Phase == v1.PodSucceeded)
}

func (p *foregroundPod) Stop(ctx context.Context) error {
	p.source.Delete(time.Now())
	return p.waitFor(ctx, "stopped", p.Done)
}

func (p *foregroundPod) Remove(ctx context.Context) error {
	p.source.Remove()
	return p.waitFor(ctx, "removed", func() bool {
		_, removed := p.workers.FinishedAt(p.pod.UID)
		return removed
	})
}

// waitFor polls cond until it holds, ctx ends, or the machinery stops.
func (p *foregroundPod) waitFor(ctx context.Context, what string, cond func() bool) error {
	ticker := time.NewTicker(podStatePoll)
	defer ticker.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod not %s in time: %w", what, context.Cause(ctx))
		case <-p.n.comps.ctx.Done():
			return p.n.stopped()
		case <-ticker.C:
		}
	}
	return nil
}
