// Package syncloop is nodelet's main loop: one select over pod source updates, lifecycle events,
// the sync tick and the housekeeping tick, dispatching work to the pod workers.
package syncloop

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/pleg"
)

// Workers is the part of the pod workers the loop drives.
type Workers interface {
	UpdatePod(u podworkers.UpdateOptions)
	State(uid types.UID) (podworkers.State, bool)
	Known() map[types.UID]podworkers.State
	FinishedAt(uid types.UID) (time.Time, bool)
}

// Admitter decides whether a new pod may run here; a refusal fails the pod with reason.
type Admitter interface {
	Admit(pod *v1.Pod, active []*v1.Pod) (ok bool, reason, message string)
	Reject(pod *v1.Pod, reason, message string)
}

// Config wires the loop to its inputs and outputs.
type Config struct {
	// NodeName: housekeeping removes only runtime pods created for this node.
	NodeName     string
	Updates      <-chan source.PodUpdate
	Events       <-chan pleg.Event
	ProbeUpdates <-chan types.UID                            // pods whose readiness or startup result changed
	RunningPods  func() ([]*container.RunningPod, time.Time) // last relist and when it listed
	SourcesReady func() bool
	// Synced, when set, is told of every update handled (see Synced).
	Synced *Synced
	// ActivePods are the pods admission counts; nil: ActivePods over Pods and Workers.
	ActivePods     func() []*v1.Pod
	Pods           *pod.Manager
	Workers        Workers
	Queue          *Queue
	Admit          Admitter
	SyncPeriod     time.Duration // 1s
	HousekeepEvery time.Duration // 2s
	// StallAfter is how long without a loop iteration before Healthy fails.
	StallAfter time.Duration
	// MirrorChanged, in cluster mode, hears of every mirror pod change for its static pod.
	MirrorChanged func(static *v1.Pod)
	// Reconciled, in cluster mode, hears of pods whose status alone changed at the source, so
	// a field nodelet owns that someone else overwrote is written back.
	Reconciled func(pod *v1.Pod)
	// DeleteMirror, in cluster mode, deletes a mirror pod whose static pod is gone. It must not
	// block the loop.
	DeleteMirror func(mirror *v1.Pod)
	// Timeline, when set, records each pod's admission.
	Timeline *timeline.Recorder
	// ContainerDied, when set, hears of every container death (container GC trims that
	// container's dead instances at once, as upstream). It must not block the loop.
	ContainerDied func(uid types.UID, containerID string)
}

// Loop is the sync loop. Create with New, start with Run.
type Loop struct {
	cfg        Config
	lastActive atomic.Int64  // unix nanos of the last iteration
	handled    atomic.Uint64 // Seq of the last pod update handled
}

// New returns a loop over cfg.
func New(cfg Config) *Loop {
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = time.Second
	}
	if cfg.HousekeepEvery == 0 {
		cfg.HousekeepEvery = 2 * time.Second
	}
	if cfg.StallAfter == 0 {
		cfg.StallAfter = time.Minute
	}
	l := &Loop{cfg: cfg}
	l.lastActive.Store(time.Now().UnixNano())
	return l
}

// Healthy fails when the loop has not turned for StallAfter.
func (l *Loop) Healthy() error {
	since := time.Since(time.Unix(0, l.lastActive.Load()))
	if since > l.cfg.StallAfter {
		return &StalledError{Since: since}
	}
	return nil
}

// StalledError reports a sync loop that stopped turning.
type StalledError struct{ Since time.Duration }

func (e *StalledError) Error() string {
	return "sync loop has not run for " + e.Since.Round(time.Second).String()
}

// Run turns the loop until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	syncTick := time.NewTicker(l.cfg.SyncPeriod)
	defer syncTick.Stop()
	houseTick := time.NewTicker(l.cfg.HousekeepEvery)
	defer houseTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u := <-l.cfg.Updates:
			l.handleUpdate(u)
			l.handled.Store(u.Seq)
			l.cfg.Synced.handledUpdate(u.Seq)
		case ev := <-l.cfg.Events:
			l.handleEvent(ev)
		case uid := <-l.cfg.ProbeUpdates:
			if p, ok := l.cfg.Pods.Get(uid); ok {
				l.dispatch(p, podworkers.Sync)
			}
		case <-syncTick.C:
			l.syncDue()
		case <-houseTick.C:
			if l.cfg.SourcesReady() {
				l.housekeep()
			}
		}
		l.lastActive.Store(time.Now().UnixNano())
	}
}

// Handled returns the Seq of the last pod update the loop has handled: every pod it carried is
// in the pod manager (admitted or refused).
func (l *Loop) Handled() uint64 { return l.handled.Load() }

// Ready reports whether the loop has handled every pod source's first snapshot (Config.Synced).
func (l *Loop) Ready() bool { return l.cfg.Synced.Ready() }

func (l *Loop) handleUpdate(u source.PodUpdate) {
	klog.V(2).InfoS("Pod update", "op", u.Op.String(), "source", u.Source, "pods", klog.KObjSlice(u.Pods))
	u.Pods = l.takeMirrors(u.Op, u.Pods)
	switch u.Op {
	case source.ADD:
		l.addPods(u.Pods)
	case source.UPDATE:
		for _, p := range u.Pods {
			l.cfg.Pods.Set(p)
			l.dispatch(p, podworkers.Update)
		}
	case source.DELETE:
		l.deletePods(u.Pods)
	case source.REMOVE:
		for _, p := range u.Pods {
			l.cfg.Pods.Remove(p.UID)
			l.cfg.Workers.UpdatePod(podworkers.UpdateOptions{
				Type: podworkers.Kill, Pod: p, Kill: &podworkers.KillOptions{Remove: true},
			})
		}
	case source.RECONCILE:
		for _, p := range u.Pods {
			l.cfg.Pods.Set(p)
			if l.cfg.Reconciled != nil {
				l.cfg.Reconciled(p)
			}
			// Readiness gates are conditions others set in the API: Ready must follow them.
			if len(p.Spec.ReadinessGates) > 0 {
				l.dispatch(p, podworkers.Sync)
			}
		}
	}
}

// addPods admits new pods oldest first, so a full node keeps the pods it had.
func (l *Loop) addPods(pods []*v1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			l.deletePods([]*v1.Pod{p}) // seen first while being deleted: only finish the deletion
			continue
		}
		if l.cfg.Admit != nil {
			if ok, reason, msg := l.cfg.Admit.Admit(p, l.activePods()); !ok {
				klog.InfoS("Pod rejected", "pod", klog.KObj(p), "reason", reason, "message", msg)
				l.cfg.Timeline.Record(p, timeline.Step{Name: timeline.Refused, Detail: reason, Error: msg})
				l.cfg.Pods.Set(p)
				l.cfg.Admit.Reject(p, reason, msg)
				continue
			}
		}
		l.cfg.Pods.Set(p)
		l.cfg.Timeline.Record(p, timeline.Step{Name: timeline.Admitted, Detail: p.Annotations["kubernetes.io/config.source"]})
		metrics.PodObserved(p.UID)
		l.dispatch(p, podworkers.Create)
	}
}

// deletePods kills pods being deleted gracefully; they stay known until their source drops them.
func (l *Loop) deletePods(pods []*v1.Pod) {
	for _, p := range pods {
		l.cfg.Pods.Set(p)
		l.cfg.Workers.UpdatePod(podworkers.UpdateOptions{
			Type: podworkers.Kill, Pod: p, Kill: &podworkers.KillOptions{GracePeriod: p.DeletionGracePeriodSeconds},
		})
	}
}

// activePods are the pods admission counts (ActivePods).
func (l *Loop) activePods() []*v1.Pod {
	if l.cfg.ActivePods != nil {
		return l.cfg.ActivePods()
	}
	return ActivePods{Pods: l.cfg.Pods, Workers: l.cfg.Workers}.List()
}

func (l *Loop) dispatch(p *v1.Pod, t podworkers.UpdateType) {
	if _, ok := l.cfg.Workers.State(p.UID); !ok && t == podworkers.Sync {
		return // rejected or finished pods have no worker to wake
	}
	l.cfg.Workers.UpdatePod(podworkers.UpdateOptions{Type: t, Pod: p})
}

// takeMirrors records the mirror pods in an update and returns the pods left to run. A mirror
// change wakes its static pod, which re-creates a deleted or stale mirror.
func (l *Loop) takeMirrors(op source.Op, pods []*v1.Pod) []*v1.Pod {
	rest := pods[:0:0]
	for _, p := range pods {
		if !podutil.IsMirror(p) {
			rest = append(rest, p)
			continue
		}
		if op == source.REMOVE {
			l.cfg.Pods.RemoveMirror(p)
		} else {
			l.cfg.Pods.SetMirror(p)
		}
		if static, ok := l.cfg.Pods.GetByName(p.Namespace, p.Name); ok {
			if l.cfg.MirrorChanged != nil {
				l.cfg.MirrorChanged(static)
			}
			l.dispatch(static, podworkers.Sync)
		}
	}
	return rest
}

func (l *Loop) handleEvent(ev pleg.Event) {
	if ev.Type == pleg.ContainerRemoved {
		return // removals are our own doing; nothing to reconcile
	}
	if ev.Type == pleg.ContainerDied && l.cfg.ContainerDied != nil {
		l.cfg.ContainerDied(ev.UID, ev.ID)
	}
	if p, ok := l.cfg.Pods.Get(ev.UID); ok {
		l.dispatch(p, podworkers.Sync)
	}
}

func (l *Loop) syncDue() {
	for _, uid := range l.cfg.Queue.Due() {
		if p, ok := l.cfg.Pods.Get(uid); ok {
			l.dispatch(p, podworkers.Sync)
		}
	}
}

// housekeep kills and removes whatever the runtime runs that no source wants any more, e.g. pods
// whose manifests went away while nodelet was down. It only runs once every source has reported.
func (l *Loop) housekeep() {
	known := l.cfg.Workers.Known()
	running, listedAt := l.cfg.RunningPods()
	for _, rp := range running {
		if !rp.OnNode(l.cfg.NodeName) {
			continue // another node's pod on a shared runtime
		}
		if _, ok := l.cfg.Pods.Get(rp.UID); ok {
			continue
		}
		if _, ok := known[rp.UID]; ok {
			continue
		}
		if done, ok := l.cfg.Workers.FinishedAt(rp.UID); ok && done.After(listedAt) {
			continue // removed after that listing was taken
		}
		// As upstream, a pod nobody knows any more gets 1s to stop, not its own grace period.
		klog.InfoS("Removing pod no source wants", "pod", klog.KRef(rp.Namespace, rp.Name), "podUID", rp.UID, "gracePeriod", orphanGracePeriod)
		l.cfg.Workers.UpdatePod(podworkers.UpdateOptions{
			Type: podworkers.Kill, Running: rp, Kill: &podworkers.KillOptions{Remove: true, GracePeriod: ptr.To(orphanGracePeriod)},
		})
	}
	l.removeOrphanedMirrors()
}

// orphanGracePeriod is the time the containers of a pod no source wants get to stop.
const orphanGracePeriod int64 = 1

// removeOrphanedMirrors deletes mirror pods whose static pod no source has any more.
func (l *Loop) removeOrphanedMirrors() {
	if l.cfg.DeleteMirror == nil {
		return
	}
	known := l.cfg.Workers.Known()
	for _, m := range l.cfg.Pods.Mirrors() {
		if static, ok := l.cfg.Pods.GetByName(m.Namespace, m.Name); ok && podutil.IsStatic(static) {
			continue
		}
		if _, terminating := known[types.UID(pod.MirrorHash(m))]; terminating {
			continue // its static pod is still stopping; the mirror goes once it is gone
		}
		klog.InfoS("Deleting mirror pod of a static pod that is gone", "pod", klog.KObj(m))
		l.cfg.Pods.RemoveMirror(m)
		l.cfg.DeleteMirror(m)
	}
}
