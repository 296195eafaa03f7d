// Package podsync is the per-pod work the pod workers sequence: read the runtime, compute and
// record status, and ask the runtime manager to converge, kill or remove the pod.
package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/prober"
	"github.com/nodelet/nodelet/internal/pod/resize"
	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/images"
)

// Volumes is the volume manager as the pod sync uses it.
type Volumes interface {
	// WaitForAttachAndMount puts the pod in the volume manager's desired state and waits
	// until the volumes its containers use are set up.
	WaitForAttachAndMount(ctx context.Context, pod *v1.Pod) error
	// TearDownPod hands back a pod whose containers are gone and waits until its volumes
	// are torn down.
	TearDownPod(ctx context.Context, uid types.UID) error
}

// Deps are what a Syncer works with.
type Deps struct {
	Runtime     container.Runtime
	Volumes     Volumes
	Statuses    *status.Manager
	Backoff     *flowcontrol.Backoff
	RootDir     string
	RuntimeName string
	HostIPs     []string
	// Cache receives every runtime status read, for readers outside the workers.
	Cache *Cache
	// Mirrors, in cluster mode, keeps static pods' mirror pods in the API; nil standalone.
	Mirrors *Mirrors
	// Terminated, in cluster mode, is told when a pod's containers have all stopped, so a
	// graceful deletion can be completed in the API; nil standalone.
	Terminated func(pod *v1.Pod)
	// RecursiveReadOnly says whether pod's runtime handler makes recursive read-only mounts,
	// for its status; nil means it does not.
	RecursiveReadOnly func(pod *v1.Pod) bool
	// StopSignals is the ContainerStopSignals feature gate: statuses report the signal each
	// container is stopped with.
	StopSignals bool
	// Prober runs the pods' liveness, readiness and startup probes; nil runs none.
	Prober *prober.Manager
	// Timeline, when set, shows a starting pod's wait for its volumes.
	Timeline *timeline.Recorder
	// Recorder receives FailedSync events; nil drops them.
	Recorder record.EventRecorder
	// StartConcurrency bounds how many pods are being started (sandbox + first containers) at
	// once. The runtime does the same total work either way, but a bounded, arrival-ordered
	// stream lets pods finish one after another instead of all together at the end.
	StartConcurrency int
	// Release are the owners of per-pod state, told in order once the runtime holds nothing
	// of a pod removed for good. An error makes the worker retry.
	Release Release
	// Claims, with DRA on, unprepares a terminating pod's ResourceClaims once its containers
	// have stopped (and before its final status), as upstream; an error makes the worker
	// retry. Nil without DRA.
	Claims interface {
		UnpreparePod(ctx context.Context, uid types.UID) error
	}
	// Resizes decides in-place resizes and runs each pod with its allocated resources; nil
	// runs every pod with its spec's.
	Resizes *resize.Resizer
}

// Syncer implements podworkers.Syncer.
type Syncer struct {
	Deps
	mu      sync.Mutex
	waiting map[types.UID]map[string]container.WaitingReason
	// starts holds one token per pod start in progress; blocked senders queue in FIFO order.
	starts chan struct{}
}

var _ podworkers.Syncer = (*Syncer)(nil)

// New returns a syncer over d.
func New(d Deps) *Syncer {
	if d.Cache == nil {
		d.Cache = NewCache()
	}
	if d.StartConcurrency <= 0 {
		d.StartConcurrency = defaultStartConcurrency
	}
	return &Syncer{Deps: d, waiting: map[types.UID]map[string]container.WaitingReason{}, starts: make(chan struct{}, d.StartConcurrency)}
}

// SyncPod converges one pod and records its status before and after.
func (s *Syncer) SyncPod(ctx context.Context, pod *v1.Pod) (podworkers.Outcome, error) {
	if s.Prober != nil {
		s.Prober.AddPod(pod)
	}
	rs, err := s.readStatus(ctx, pod)
	if err != nil {
		return podworkers.Outcome{}, err
	}
	if pod, err = s.Resizes.Handle(pod); err != nil {
		return podworkers.Outcome{}, err
	}
	st, ended := s.recordStatus(pod, rs, nil, false)
	if ended {
		s.stopProbes(rs.UID)
		return podworkers.Outcome{Terminal: true}, nil
	}
	deadline, hasDeadline := deadlineLeft(pod, st, time.Now())
	if hasDeadline && deadline <= 0 {
		s.recordStatus(pod, rs, &status.Verdict{Phase: v1.PodFailed, Reason: reasonDeadlineExceeded, Message: messageDeadline}, false)
		if s.Recorder != nil {
			s.Recorder.Event(pod, v1.EventTypeNormal, reasonDeadlineExceeded, messageDeadline)
		}
		s.stopProbes(rs.UID)
		return podworkers.Outcome{Terminal: true}, nil
	}
	if err := s.makeDirs(pod.UID); err != nil {
		return podworkers.Outcome{}, err
	}
	if s.Mirrors != nil && podutil.IsStatic(pod) {
		if err := s.Mirrors.Ensure(ctx, pod); err != nil {
			klog.ErrorS(err, "Mirror pod not in place; the static pod runs anyway", "pod", klog.KObj(pod))
		}
	}
	if s.Prober != nil && s.Prober.Killing(pod.UID) {
		// As upstream, whose pod sync does that kill itself: nothing of the pod starts or
		// stops (a sidecar's restart neither) until it ends; its end resyncs the pod.
		klog.V(4).InfoS("Pod sync waits for a probe's kill of its container", "pod", klog.KObj(pod))
		return podworkers.Outcome{}, nil
	}
	if err := s.waitForVolumes(ctx, pod, needsSandbox(rs)); err != nil {
		return podworkers.Outcome{}, err
	}
	if needsSandbox(rs) {
		if err := s.takeStartSlot(ctx, pod, rs); err != nil {
			return podworkers.Outcome{}, err
		}
		defer func() { <-s.starts }()
	}
	res := s.Runtime.SyncPod(ctx, pod, rs, s.Backoff)
	s.Resizes.Done(pod, res)
	s.setWaiting(pod.UID, res.Waiting)
	if res.Err != nil && s.Recorder != nil && !imageError(res.Err) {
		s.Recorder.Eventf(pod, v1.EventTypeWarning, "FailedSync", "Error syncing pod, skipping: %v", res.Err)
	}
	if rs, err = s.readStatus(ctx, pod); err == nil {
		st, _ := s.recordStatus(pod, rs, nil, false)
		metrics.ObservePodStatus(pod, &st)
	}
	requeue := res.RequeueAfter
	if hasDeadline && (requeue == 0 || deadline < requeue) {
		requeue = deadline
	}
	return podworkers.Outcome{RequeueAfter: requeue}, res.Err
}

// takeStartSlot waits for a start slot (give it back with <-s.starts). A pod that has to wait
// pulls its images meanwhile, so a queue of new pods pulls while the slots' pods start.
func (s *Syncer) takeStartSlot(ctx context.Context, pod *v1.Pod, rs *container.PodStatus) error {
	select {
	case s.starts <- struct{}{}:
		return nil
	default:
	}
	s.Runtime.PullImages(ctx, pod, rs)
	select {
	case s.starts <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitForVolumes waits until the volume manager has set up the volumes pod's containers use.
// A pod being started shows the wait on its timeline.
func (s *Syncer) waitForVolumes(ctx context.Context, pod *v1.Pod, starting bool) error {
	end := func(string, error) {}
	if starting && len(pod.Spec.Volumes) > 0 {
		end = s.Timeline.Begin(pod, timeline.Step{Name: timeline.VolumesMounted, Call: "WaitForAttachAndMount"})
	}
	err := s.Volumes.WaitForAttachAndMount(ctx, pod)
	end("", err)
	if err == nil {
		return nil
	}
	// As upstream: a wait that timed out posts nothing (the reconciler's FailedMount events
	// for each failed set-up say why); one that failed otherwise (volumes that cannot be
	// resolved) posts FailedMount.
	if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && s.Recorder != nil {
		s.Recorder.Eventf(pod, v1.EventTypeWarning, "FailedMount", "Unable to attach or mount volumes: %v", err)
	}
	return fmt.Errorf("unable to attach or mount volumes: %w", err)
}

// SyncTerminatingPod stops the pod's containers and sandbox with the grace period.
func (s *Syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, running *container.RunningPod, grace *int64) error {
	if pod == nil && running == nil {
		return nil
	}
	rs, err := s.readStatusFor(ctx, pod, running)
	if err != nil {
		return err
	}
	s.stopProbes(rs.UID) // a liveness probe must not kill during graceful termination
	seconds := gracePeriod(pod, grace)
	if err := s.Runtime.KillPod(ctx, pod, toRunning(rs), seconds); err != nil {
		return fmt.Errorf("killing pod: %w", err)
	}
	s.Resizes.RoomMade() // its resources are free for resizes waiting for room
	if s.Claims != nil {
		if err := s.Claims.UnpreparePod(ctx, rs.UID); err != nil {
			return fmt.Errorf("unpreparing the pod's dynamic resources: %w", err)
		}
	}
	if pod != nil {
		if rs, err := s.readStatus(ctx, pod); err == nil {
			s.recordStatus(pod, rs, nil, pod.DeletionTimestamp != nil)
		}
	}
	return nil
}

// SyncTerminatedPod removes the pod from the runtime and forgets it when remove is set; a
// finished pod that is still wanted keeps its stopped containers (for their logs and status).
func (s *Syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, uid types.UID, remove bool) error {
	// Its containers will not run again: its volumes go now, not only once the pod object
	// is gone.
	if err := s.Volumes.TearDownPod(ctx, uid); err != nil {
		return fmt.Errorf("tearing down the volumes of a terminated pod: %w", err)
	}
	if !remove {
		if s.Terminated != nil && pod != nil {
			s.Terminated(pod)
		}
		return nil
	}
	if s.Mirrors != nil && pod != nil && podutil.IsStatic(pod) {
		if err := s.Mirrors.Delete(ctx, pod); err != nil {
			return fmt.Errorf("deleting mirror pod: %w", err)
		}
	}
	if err := s.Runtime.RemovePod(ctx, uid); err != nil {
		return fmt.Errorf("removing pod from the runtime: %w", err)
	}
	if err := s.Release.run(uid); err != nil {
		return err
	}
	metrics.ForgetPod(uid)
	s.Cache.Delete(uid)
	s.setWaiting(uid, nil)
	s.stopProbes(uid)
	if pod != nil {
		for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
			s.Backoff.DeleteEntry(BackoffKey(pod, &c))
		}
		metrics.ForgetProbes(pod.Name, pod.Namespace)
	}
	// Crash-loop entries no spec names any more (an orphan's, a container whose image was
	// changed) go once they are stale, as upstream's housekeeping collects them.
	s.Backoff.GC()
	return nil
}

func (s *Syncer) readStatus(ctx context.Context, pod *v1.Pod) (*container.PodStatus, error) {
	rs, err := s.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, fmt.Errorf("reading pod status from the runtime: %w", err)
	}
	s.Cache.Set(rs)
	return rs, nil
}

func (s *Syncer) readStatusFor(ctx context.Context, pod *v1.Pod, running *container.RunningPod) (*container.PodStatus, error) {
	if pod != nil {
		return s.readStatus(ctx, pod)
	}
	rs, err := s.Runtime.GetPodStatus(ctx, running.UID, running.Name, running.Namespace)
	if err != nil {
		return nil, fmt.Errorf("reading pod status from the runtime: %w", err)
	}
	return rs, nil
}

// recordStatus computes and keeps pod's status; verdict, if any, is the syncer's decision on
// the whole pod; final says its containers were stopped for good. ended says the pod's
// containers are done for good (its phase is, or is about to be, Succeeded or Failed).
func (s *Syncer) recordStatus(pod *v1.Pod, rs *container.PodStatus, verdict *status.Verdict, final bool) (st v1.PodStatus, ended bool) {
	prev, ok := s.Statuses.Get(pod.UID)
	in := status.Input{
		Pod: pod, Runtime: rs, Waiting: s.getWaiting(pod.UID), RuntimeName: s.RuntimeName,
		HostIPs: s.HostIPs, Now: metav1.NewTime(time.Now()), Verdict: verdict, Final: final, StopSignals: s.StopSignals,
	}
	if ok {
		in.Previous = &prev
	} else if api := pod.Status; status.IsTerminal(api.Phase) {
		// The API has the pod finished already (a node shutdown or eviction before nodelet
		// restarted): it stays finished and its containers are not started again, as upstream.
		in.Previous = &api
	}
	if s.RecursiveReadOnly != nil {
		in.SupportsRecursiveReadOnly = s.RecursiveReadOnly(pod)
	}
	if s.Prober != nil {
		in.Ready = func(name, id string) bool { return s.Prober.Ready(pod, name, id) }
		in.Started = func(name, id string) bool { return s.Prober.Started(pod, name, id) }
	}
	st = status.Compute(in)
	ended = status.IsTerminal(st.Phase)
	if ended && verdict == nil && !final && (in.Previous == nil || !status.IsTerminal(in.Previous.Phase)) && anyRunning(rs) {
		// As upstream, a pod goes Succeeded or Failed only once none of its containers runs:
		// a Never pod whose init container failed, or whose app containers are done, still
		// has sidecars to stop, and clients reading the terminal phase expect them stopped.
		st.Phase = heldPhase(in.Previous, pod.Status.Phase)
	}
	s.Resizes.Decorate(pod, rs, &st)
	s.Statuses.Set(pod, st)
	return st, ended
}

// heldPhase is the phase a pod keeps while its containers are stopped: the one last recorded,
// else the API's (a nodelet restarted meanwhile), else Pending.
func heldPhase(previous *v1.PodStatus, api v1.PodPhase) v1.PodPhase {
	switch {
	case previous != nil && previous.Phase != "":
		return previous.Phase
	case api != "" && !status.IsTerminal(api):
		return api
	}
	return v1.PodPending
}

// anyRunning says whether one of the pod's containers still runs in the runtime.
func anyRunning(rs *container.PodStatus) bool {
	if rs == nil {
		return false
	}
	for _, c := range rs.Containers {
		if c.State == container.StateRunning {
			return true
		}
	}
	return false
}

func (s *Syncer) makeDirs(uid types.UID) error {
	for _, d := range []string{"volumes", "plugins", "containers"} {
		if err := os.MkdirAll(filepath.Join(s.RootDir, "pods", string(uid), d), 0o750); err != nil {
			return fmt.Errorf("creating pod directory: %w", err)
		}
	}
	return nil
}

func (s *Syncer) getWaiting(uid types.UID) map[string]container.WaitingReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting[uid]
}

func (s *Syncer) setWaiting(uid types.UID, w map[string]container.WaitingReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(w) == 0 {
		delete(s.waiting, uid)
		return
	}
	s.waiting[uid] = w
}

func (s *Syncer) stopProbes(uid types.UID) {
	if s.Prober != nil {
		s.Prober.RemovePod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}})
	}
}

// imageError reports pull failures, which the image manager already reported as events.
func imageError(err error) bool {
	return errors.Is(err, images.ErrImagePull) || errors.Is(err, images.ErrImagePullBackOff) ||
		errors.Is(err, images.ErrImageNeverPull) || errors.Is(err, images.ErrInvalidImageName)
}

// defaultStartConcurrency suits a small node; the runtime's own throughput is the limit.
const defaultStartConcurrency = 4

// needsSandbox reports whether syncing the pod starts with creating its sandbox: the heavy,
// runtime-bound step worth queueing.
func needsSandbox(rs *container.PodStatus) bool {
	return len(rs.Sandboxes) == 0 || !rs.Sandboxes[0].Ready
}

// gracePeriod picks the kill grace: an explicit override, else the pod's own, else -1, which
// tells the runtime to use the grace period recorded on each container (orphaned pods).
func gracePeriod(pod *v1.Pod, override *int64) int64 {
	switch {
	case override != nil:
		return *override
	case pod != nil && pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return -1
}

func toRunning(rs *container.PodStatus) *container.RunningPod {
	return &container.RunningPod{UID: rs.UID, Name: rs.Name, Namespace: rs.Namespace, Sandboxes: rs.Sandboxes, Containers: rs.Containers}
}

// BackoffKey names a container's crash-loop back-off entry; it must match the runtime's key.
func BackoffKey(pod *v1.Pod, c *v1.Container) string {
	return container.BackoffKey(pod, c)
}
