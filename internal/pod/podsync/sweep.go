package podsync

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Retainer is an owner of per-pod state that can release, on its own, every pod it keeps
// state for that is gone: a pod removed while nodelet was down never reaches SyncTerminatedPod.
type Retainer interface {
	Name() string
	// RetainOnly releases every pod keep says no to.
	RetainOnly(keep func(uid types.UID) bool) error
}

// Retained is one owner in the sweep.
type Retained struct {
	Retainer
	// ActiveOnly: the owner keeps state only for active pods, so a finished pod still known
	// frees it (NUMA memory). Otherwise a pod keeps its state while a source knows it or the
	// runtime has anything of it (cgroups, allocation checkpoints).
	ActiveOnly bool
}

// Sweep is the one search for per-pod state of pods that are gone. Each pass takes one look
// at the pods (active, known, in the runtime) and hands it to every owner in order.
type Sweep struct {
	Owners []Retained
	// Ready says every pod source has been handled: until then a pod missing from Known may
	// still come.
	Ready func() bool
	// Active are the pods nodelet runs (syncloop.ActivePods).
	Active func() []*v1.Pod
	// Known says a source wants the pod.
	Known func(uid types.UID) bool
	// Runtime is the last list of the runtime's pods and when it was taken (zero: not yet).
	Runtime func() ([]*container.RunningPod, time.Time)
	// Period spaces the passes.
	Period time.Duration
}

// Run sweeps every Period until ctx ends.
func (s *Sweep) Run(ctx context.Context) error {
	wait.UntilWithContext(ctx, func(context.Context) { s.Once() }, s.Period)
	return nil
}

// Once makes one pass; it does nothing while its view of the pods would be incomplete, as
// it would disown live pods.
func (s *Sweep) Once() {
	if len(s.Owners) == 0 || !s.Ready() {
		return
	}
	listed, at := s.Runtime()
	if at.IsZero() {
		return
	}
	active := map[types.UID]bool{}
	for _, p := range s.Active() {
		active[p.UID] = true
	}
	onRuntime := map[types.UID]bool{}
	for _, rp := range listed {
		onRuntime[rp.UID] = true
	}
	isActive := func(uid types.UID) bool { return active[uid] }
	present := func(uid types.UID) bool { return active[uid] || onRuntime[uid] || s.Known(uid) }
	for _, o := range s.Owners {
		keep := present
		if o.ActiveOnly {
			keep = isActive
		}
		if err := o.RetainOnly(keep); err != nil {
			klog.ErrorS(err, "Could not release the state of pods that are gone; retrying later", "owner", o.Name())
		}
	}
}
