package app

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/cli/podrun"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/pod/admission"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/pod/syncloop"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/pleg"
)

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
	comps, nodeletCtx := newComponents(context.WithoutCancel(ctx))
	// Until the pod is handed over there is nothing to stop gracefully: a signal while
	// building (e.g. waiting for the runtime) ends the run at once.
	interruptBuild := context.AfterFunc(ctx, func() { comps.stop(context.Cause(ctx)) })
	n, err := build(nodeletCtx, cfg, comps, asForeground)
	if !interruptBuild() {
		err = fmt.Errorf("stopped before the pod started: %w", context.Cause(ctx))
	}
	var p *podrun.LocalPod
	if err == nil {
		p, err = n.buildPod(nodeletCtx, pod)
	}
	if err != nil {
		comps.release()
		return err
	}
	foregroundBuilt(n)
	return comps.Run(nodeletCtx, func(nodeletCtx context.Context) error {
		// drive's context ends with ctx, or when nodelet stops.
		driveCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stopDrive := context.AfterFunc(nodeletCtx, func() { cancel(stopped(nodeletCtx)) })
		defer stopDrive()
		return drive(driveCtx, p)
	})
}

// foregroundBuilt is called with the foreground agent before its components start; tests add
// a component that fails.
var foregroundBuilt = func(*agent) {}

// buildPod adds the pod's source, its loop and the rotation of its logs, and gives the pod
// drive is handed.
func (n *agent) buildPod(nodeletCtx context.Context, pod *v1.Pod) (*podrun.LocalPod, error) {
	n.merger = source.NewMerger()
	single := source.NewSinglePod(pod, n.merger.Channel(podutil.FileSource))
	n.sources = []string{podutil.FileSource}
	n.comps.start("pod source", single.Run)
	n.comps.start("merger", n.merger.Run)
	workers := n.startPodLoop()
	if err := n.startLogRotation(podrun.LogDir(n.cfg.Kubelet.PodLogsDir, pod)); err != nil {
		return nil, err
	}
	return podrun.NewLocalPod(podrun.Deps{
		Pod: pod, Source: single, Workers: workers, Statuses: n.statuses.Get, Timeline: n.timeline,
		Stopped: nodeletCtx.Done(), StopErr: func() error { return stopped(nodeletCtx) },
	}), nil
}

// stopped is why the machinery stopped before drive returned.
func stopped(nodeletCtx context.Context) error {
	return fmt.Errorf("nodelet stopped: %w", context.Cause(nodeletCtx))
}

// startPodLoop starts the PLEG, the pod workers and the sync loop for the foreground pod.
func (n *agent) startPodLoop() *podworkers.PodWorkers {
	kc := n.cfg.Kubelet
	relister := pleg.New(n.runtime, n.listing, plegPeriod, nil)
	workers := podworkers.New(n.workerStates, n.syncer, n.queue, kc.SyncFrequency.Duration, n.recorder)
	admit := &admission.Admitter{MaxPods: int(maxPods(kc)), Statuses: n.statuses, AllowedUnsafeSysctls: kc.AllowedUnsafeSysctls, Node: n.node, Recorder: n.recorder, RuntimeFeatures: n.features,
		StopSignals: n.cfg.StopSignals, ImageVolumes: n.cfg.ImageVolumes}
	// Never ready: housekeeping would remove every other pod of this node in the runtime, and
	// the volume manager their volumes.
	sourcesReady := func() bool { return false }
	loop := syncloop.New(syncloop.Config{
		NodeName: n.cfg.NodeName,
		Updates:  n.merger.Updates(), Events: relister.Events(), RunningPods: relister.RunningPods,
		SourcesReady: sourcesReady,
		Pods:         n.pods, Workers: workers, Queue: n.queue, Admit: admit,
		ProbeUpdates: n.prober.Updates(), Timeline: n.timeline,
	})
	n.comps.start("volume manager", n.volumes.Run)
	n.comps.start("pleg", relister.Run)
	n.comps.start("exit events", func(ctx context.Context) error { return relister.WatchExits(ctx, n.cri) })
	n.comps.start("sync loop", loop.Run)
	n.comps.start("pod workers", workers.Run)
	return workers
}
