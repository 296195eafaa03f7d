package podworkers

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/goroutines"
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// retryAfterError is how soon a failed step is tried again. Kills retry on this too, so a kill
// request survives runtime errors.
const retryAfterError = 2 * time.Second

// PodWorkers owns every pod's worker goroutine. The workers and their states are kept in its
// States, which answers State, CleanedUp, Known and FinishedAt.
type PodWorkers struct {
	*States
	syncer  Syncer
	queue   Requeuer
	resync  time.Duration
	running *goroutines.Goroutines // the worker goroutines, under Run's context

	// backoff spaces the retries of pods whose sync panicked; recorder posts those panics.
	backoff  *flowcontrol.Backoff
	recorder record.EventRecorder
}

// finishedMemory is how long a removed pod's finish time is kept.
const finishedMemory = time.Minute

// errKillArrived interrupts a sync when a kill request comes in.
var errKillArrived = errors.New("kill requested")

// New returns pod workers keeping their states in states (nil: a States of their own); Run
// runs their goroutines. resync is the normal interval between syncs of a healthy pod
// (syncFrequency); recorder, when not nil, posts an event on a pod whose sync panicked.
func New(states *States, syncer Syncer, queue Requeuer, resync time.Duration, recorder record.EventRecorder) *PodWorkers {
	if states == nil {
		states = NewStates()
	}
	return &PodWorkers{
		States: states,
		syncer: syncer, queue: queue, resync: resync, recorder: recorder,
		running: goroutines.New(),
		backoff: newPanicBackoff(),
	}
}

// Run runs the goroutine of every worker UpdatePod creates until ctx ends; then it waits for
// all of them to return. Pods keep running: nodelet adopts them at its next start.
func (p *PodWorkers) Run(ctx context.Context) error { return p.running.Run(ctx) }

// UpdatePod hands an update to the pod's worker, starting one if needed. It never blocks on the
// worker.
func (p *PodWorkers) UpdatePod(u UpdateOptions) {
	uid := u.uid()
	p.mu.Lock()
	w, ok := p.workers[uid]
	if !ok {
		if u.Type == Sync && u.Pod == nil {
			p.mu.Unlock()
			return
		}
		w = newWorker(uid)
		p.workers[uid] = w
		created := time.Now()
		p.running.Go(func(ctx context.Context) {
			metrics.ObservePodWorkerStart(time.Since(created))
			p.run(ctx, w)
		})
	}
	p.mu.Unlock()
	w.offer(u)
}

// earlierInstanceActive reports whether another version of static pod pod (same namespace and
// name, another UID) still has a worker: a changed manifest is a new pod, and it must not run
// next to the old one, nor replace its mirror pod, before the old one has terminated.
func (p *PodWorkers) earlierInstanceActive(w *worker, pod *v1.Pod) bool {
	if pod == nil || !podutil.IsStatic(pod) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, other := range p.workers {
		if uid == w.uid {
			continue
		}
		other.mu.Lock()
		same := other.pod != nil && other.pod.Namespace == pod.Namespace && other.pod.Name == pod.Name
		other.mu.Unlock()
		if same {
			return true
		}
	}
	return false
}

func (p *PodWorkers) forget(w *worker) {
	now := time.Now()
	p.mu.Lock()
	if p.workers[w.uid] == w {
		delete(p.workers, w.uid)
	}
	// Wake the static pods that waited for this one to be gone.
	w.mu.Lock()
	gone := w.pod
	w.mu.Unlock()
	for _, other := range p.workers {
		other.mu.Lock()
		waiting := gone != nil && other.pod != nil && other.pod.Namespace == gone.Namespace && other.pod.Name == gone.Name
		other.mu.Unlock()
		if waiting {
			other.signal()
		}
	}
	p.backoff.DeleteEntry(string(w.uid))
	p.finished[w.uid] = now
	for uid, at := range p.finished {
		if now.Sub(at) > finishedMemory {
			delete(p.finished, uid)
		}
	}
	p.mu.Unlock()
}

// worker is one pod's mailbox and state.
type worker struct {
	uid   types.UID
	wake  chan struct{}
	mu    sync.Mutex
	state State
	pod   *v1.Pod
	// recreate holds a pod re-added with the same UID while this one was being removed; it
	// starts fresh once the removal is done.
	recreate *v1.Pod
	run      *container.RunningPod
	kill     *KillOptions
	cancel   context.CancelCauseFunc // cancels an in-flight SyncPod when a kill arrives
	// cleanedUp: the terminated pod's cleanup (SyncTerminatedPod) has succeeded.
	cleanedUp bool
}

func newWorker(uid types.UID) *worker {
	return &worker{uid: uid, wake: make(chan struct{}, 1)}
}

// offer merges an update into the mailbox: the newest spec wins, kill requests accumulate.
func (w *worker) offer(u UpdateOptions) {
	w.mu.Lock()
	if u.Type == Create && w.kill != nil && w.kill.Remove {
		w.recreate = u.Pod
		w.mu.Unlock()
		return
	}
	if u.Pod != nil {
		w.pod = u.Pod
	}
	if u.Running != nil {
		w.run = u.Running
	}
	if u.Type == Kill {
		w.kill = mergeKill(w.kill, u.Kill)
		if w.cancel != nil && w.state == Syncing {
			w.cancel(errKillArrived) // interrupt a sync (e.g. a long pull); never a kill or clean-up in progress
		}
	}
	w.mu.Unlock()
	w.signal()
}

func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// mergeKill keeps the strongest request: Remove sticks and the shortest grace period wins.
func mergeKill(have, add *KillOptions) *KillOptions {
	if add == nil {
		add = &KillOptions{}
	}
	if have == nil {
		c := *add
		return &c
	}
	out := *have
	out.Remove = out.Remove || add.Remove
	if add.GracePeriod != nil && (out.GracePeriod == nil || *add.GracePeriod < *out.GracePeriod) {
		g := *add.GracePeriod
		out.GracePeriod = &g
	}
	return &out
}

// run is the worker goroutine: one step per wake-up until the pod is removed or ctx ends.
func (p *PodWorkers) run(ctx context.Context, w *worker) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		if ctx.Err() != nil {
			return // stopping: no step on a cancelled context
		}
		if done := p.step(ctx, w); done {
			p.forget(w)
			w.mu.Lock()
			again := w.recreate
			w.mu.Unlock()
			if again != nil {
				metrics.RestartedPod(again.Annotations["kubernetes.io/config.source"] != "api")
				p.UpdatePod(UpdateOptions{Type: Create, Pod: again})
			}
			return
		}
	}
}

// step performs the work due in the current state and reports whether the worker is finished.
func (p *PodWorkers) step(life context.Context, w *worker) bool {
	w.mu.Lock()
	if w.kill != nil && w.state == Syncing {
		w.state = Terminating
	}
	state, pod, running, kill := w.state, w.pod, w.run, w.kill
	op := metrics.PodWorkerSync
	if state != Syncing {
		op = metrics.PodWorkerKill
	}
	defer metrics.ObservePodWorker(op, time.Now())
	var ctx context.Context
	ctx, w.cancel = context.WithCancelCause(life)
	w.mu.Unlock()
	defer w.cancel(nil)

	logger := klog.LoggerWithValues(klog.Background(), "podUID", w.uid, "state", state.String())
	if pod == nil && running != nil {
		logger = klog.LoggerWithValues(logger, "pod", klog.KRef(running.Namespace, running.Name))
	}
	var done bool
	retryIn, panicked := p.contain(w, pod, logger, func() { done = p.stepIn(ctx, w, state, pod, running, kill, logger) })
	if !panicked {
		p.backoff.DeleteEntry(string(w.uid))
		return done
	}
	// A kill or clean-up is retried by the worker itself; a sync waits for the queue, and any
	// kill that arrives meanwhile wakes the worker at once.
	if state == Syncing {
		p.queue.Enqueue(w.uid, retryIn)
	} else {
		time.AfterFunc(retryIn, w.signal)
	}
	return false
}

// stepIn is the work of one state; it reports whether the worker is finished.
func (p *PodWorkers) stepIn(ctx context.Context, w *worker, state State, pod *v1.Pod, running *container.RunningPod, kill *KillOptions, logger klog.Logger) bool {
	switch state {
	case Syncing:
		if p.earlierInstanceActive(w, pod) {
			logger.V(2).Info("Static pod waits for its previous version to finish terminating", "pod", klog.KObj(pod))
			return false // woken again when that worker is done
		}
		p.syncPod(ctx, w, pod, logger)
	case Terminating:
		var grace *int64
		if kill != nil {
			grace = kill.GracePeriod
		}
		if err := p.syncer.SyncTerminatingPod(ctx, pod, running, grace); err != nil {
			logger.Error(err, "Killing pod failed; will retry")
			p.retry(w)
			return false
		}
		p.setState(w, Terminated)
		w.signal()
	case Terminated:
		remove := kill != nil && kill.Remove
		w.mu.Lock()
		readded := w.recreate != nil
		w.mu.Unlock()
		// A pod re-added with the same UID (a static pod's manifest put back) keeps its dead
		// containers, so its containers' restart counts go on; only the worker starts over.
		if err := p.syncer.SyncTerminatedPod(ctx, pod, w.uid, remove && !readded); err != nil {
			logger.Error(err, "Cleaning up pod failed; will retry")
			p.retry(w)
			return false
		}
		w.mu.Lock()
		w.cleanedUp = true
		w.mu.Unlock()
		return remove
	}
	return false
}

func (p *PodWorkers) syncPod(ctx context.Context, w *worker, pod *v1.Pod, logger klog.Logger) {
	out, err := p.syncer.SyncPod(ctx, pod)
	switch {
	case errors.Is(context.Cause(ctx), errKillArrived):
		w.signal() // interrupted by a kill: go straight on to it
	case err != nil:
		logger.Error(err, "Syncing pod failed; will retry", "pod", klog.KObj(pod))
		p.queue.Enqueue(w.uid, retryAfterError)
	case out.Terminal:
		w.mu.Lock()
		w.kill = mergeKill(w.kill, nil)
		w.mu.Unlock()
		p.setState(w, Terminating)
		w.signal()
	default:
		next := p.resync + time.Duration(rand.Int64N(int64(p.resync)/2+1))
		if out.RequeueAfter > 0 && out.RequeueAfter < next {
			next = out.RequeueAfter
		}
		p.queue.Enqueue(w.uid, next)
	}
}

func (p *PodWorkers) setState(w *worker, s State) {
	w.mu.Lock()
	w.state = s
	w.mu.Unlock()
}

// retry wakes the worker again after a pause, so a failed kill or cleanup is never dropped.
func (p *PodWorkers) retry(w *worker) {
	time.AfterFunc(retryAfterError, w.signal)
}
