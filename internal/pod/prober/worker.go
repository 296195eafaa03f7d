package prober

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// probeKind is liveness, readiness or startup.
type probeKind int

const (
	liveness probeKind = iota
	readiness
	startup
)

// String is the capitalised name used in events and metrics.
func (k probeKind) String() string {
	switch k {
	case liveness:
		return "Liveness"
	case readiness:
		return "Readiness"
	default:
		return "Startup"
	}
}

// result of one probe or of a worker.
type result int

const (
	unknown result = iota
	success
	failure
)

// initial is what a worker publishes for a container instance before its first probe
// verdict: a container is not ready until its readiness probe passes, and alive until proven
// otherwise.
func (k probeKind) initial() result {
	switch k {
	case readiness:
		return failure
	case liveness:
		return success
	default:
		return unknown
	}
}

// worker probes one container of one pod with one probe, every period.
type worker struct {
	m     *Manager
	key   workerKey
	probe *v1.Probe // defaulted copy

	// cancel ends run; nil until Manager.Run starts the worker. Guarded by m.mu.
	cancel  context.CancelFunc
	trigger chan struct{}
	done    chan struct{}

	podMu sync.Mutex
	pod   *v1.Pod

	// State of the container instance being probed; touched only by run.
	containerID string
	lastResult  result
	resultRun   int
	onHold      bool // killed after a failure: wait for the next instance
}

func newWorker(m *Manager, key workerKey, pod *v1.Pod, probe *v1.Probe) *worker {
	return &worker{
		m: m, key: key, probe: withDefaults(probe), pod: pod,
		trigger: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// stop ends a started worker; one that never started has nothing to end. Call with m.mu held.
func (w *worker) stop() {
	if w.cancel != nil {
		w.cancel()
	}
}

func withDefaults(p *v1.Probe) *v1.Probe {
	p = p.DeepCopy()
	container.SetProbeDefaults(p)
	return p
}

func (w *worker) setPod(pod *v1.Pod) {
	w.podMu.Lock()
	w.pod = pod
	w.podMu.Unlock()
}

func (w *worker) currentPod() *v1.Pod {
	w.podMu.Lock()
	defer w.podMu.Unlock()
	return w.pod
}

// wake asks for a probe now; a pending request is enough.
func (w *worker) wake() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

// run probes until ctx ends (the worker is stopped or the prober shuts down) or its container
// is gone for good.
func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	ticker := time.NewTicker(time.Duration(w.probe.PeriodSeconds) * w.m.unit)
	defer ticker.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		if !w.doProbe(ctx) {
			w.m.removeWorker(w)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-w.trigger:
		}
	}
}

// doProbe runs one probe if the container is due for it and acts on the result. It returns
// false when the worker should stop.
func (w *worker) doProbe(ctx context.Context) bool {
	pod := w.currentPod()
	st, ok := w.m.deps.Status(pod.UID)
	if !ok {
		return true // not synced yet
	}
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		return false
	}
	cs := findStatus(&st, w.key.container)
	if cs == nil || cs.ContainerID == "" {
		return true // not created yet
	}
	if cs.ContainerID != w.containerID {
		w.containerID, w.lastResult, w.resultRun, w.onHold = cs.ContainerID, unknown, 0, false
		w.publish(ctx, w.key.kind.initial())
	}
	if cs.State.Running == nil {
		w.publish(ctx, failure)
		// Sidecars restart whatever the pod's policy says.
		return cs.State.Terminated == nil || pod.Spec.RestartPolicy != v1.RestartPolicyNever ||
			sidecar.Is(findContainer(pod, w.key.container))
	}
	if w.onHold {
		return true
	}
	if pod.DeletionTimestamp != nil && w.key.kind != readiness {
		// A pod being deleted is not killed or held back by its probes any more; the worker
		// idles until RemovePod.
		w.publish(ctx, success)
		return true
	}
	if time.Since(cs.State.Running.StartedAt.Time) < time.Duration(w.probe.InitialDelaySeconds)*w.m.unit {
		return true
	}
	started := w.m.Started(pod, w.key.container, w.containerID)
	if (w.key.kind == startup) == started {
		return true // startup probes run until they pass, the others only after that
	}
	w.record(ctx, pod, w.runProbe(ctx, pod, &st))
	return true
}

// record counts res towards the thresholds and publishes or acts on a settled result.
func (w *worker) record(ctx context.Context, pod *v1.Pod, res result) {
	if res == unknown {
		return // an error running the probe says nothing about the container
	}
	if res == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = res, 1
	}
	if (res == failure && w.resultRun < int(w.probe.FailureThreshold)) ||
		(res == success && w.resultRun < int(w.probe.SuccessThreshold)) {
		return
	}
	w.publish(ctx, res)
	if res == failure && w.key.kind != readiness {
		w.kill(ctx, pod)
	}
}

// publish records the worker's result and, for results the status shows, asks for a resync.
func (w *worker) publish(ctx context.Context, res result) {
	if w.m.setResult(w, w.containerID, res) && w.key.kind != liveness {
		w.m.notify(ctx, w.key.uid)
	}
}

// kill stops the container after a liveness or startup failure; the pod sync restarts it per
// restartPolicy. On error the next failed probe tries again.
func (w *worker) kill(ctx context.Context, pod *v1.Pod) {
	kind := strings.ToLower(w.key.kind.String())
	msg := fmt.Sprintf("Container %s failed %s probe, will be restarted", w.key.container, kind)
	if sidecar.Is(findContainer(pod, w.key.container)) {
		msg = fmt.Sprintf("Init container %s failed %s probe", w.key.container, kind) // upstream's text
	}
	grace := int64(-1)
	if w.probe.TerminationGracePeriodSeconds != nil {
		grace = *w.probe.TerminationGracePeriodSeconds
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	klog.InfoS("Killing container after probe failure", "pod", klog.KObj(pod), "container", w.key.container,
		"probe", kind, "containerID", w.containerID, "gracePeriod", grace)
	if w.m.deps.Kill == nil {
		return
	}
	done := w.m.trackKill(w.key.uid)
	err := w.m.deps.Kill(ctx, pod, w.containerID, grace, msg)
	done()
	if err != nil {
		klog.ErrorS(err, "Killing container after probe failure failed", "pod", klog.KObj(pod), "container", w.key.container)
	} else {
		w.onHold, w.resultRun = true, 0
	}
	w.m.notify(ctx, w.key.uid) // the pod's sync held during the kill: resync it
}

// findStatus returns the named container's status, app containers and sidecars alike.
func findStatus(st *v1.PodStatus, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
