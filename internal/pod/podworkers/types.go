// Package podworkers runs one goroutine per pod UID. Updates for a pod are coalesced (a newer spec
// replaces one not yet acted on) but a kill is never dropped, and each pod moves through
// syncing → terminating → terminated.
package podworkers

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// UpdateType says why a worker is being woken.
type UpdateType int

const (
	Create UpdateType = iota
	Update
	Sync
	Kill
)

// KillOptions describes a kill request.
type KillOptions struct {
	// GracePeriod overrides the pod's terminationGracePeriodSeconds when set.
	GracePeriod *int64
	// Remove deletes the pod's containers and sandbox once stopped and forgets the pod.
	Remove bool
}

// UpdateOptions is one request to a pod worker.
type UpdateOptions struct {
	Type UpdateType
	// Pod is the desired pod; nil for an orphan found only on the runtime.
	Pod *v1.Pod
	// Running is the runtime's view, required when Pod is nil.
	Running *container.RunningPod
	// Kill is set for Kill updates.
	Kill *KillOptions
}

func (o UpdateOptions) uid() types.UID {
	if o.Pod != nil {
		return o.Pod.UID
	}
	return o.Running.UID
}

// Outcome is what one SyncPod reports back.
type Outcome struct {
	// Terminal means the pod finished for good (Succeeded or Failed): stop syncing it.
	Terminal bool
	// RequeueAfter asks for another sync this soon (a back-off ending); 0 = the usual resync.
	RequeueAfter time.Duration
}

// Syncer does the per-pod work; the workers only sequence it.
type Syncer interface {
	SyncPod(ctx context.Context, pod *v1.Pod) (Outcome, error)
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, running *container.RunningPod, gracePeriod *int64) error
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, uid types.UID, remove bool) error
}

// Requeuer schedules the next sync of a pod.
type Requeuer interface {
	Enqueue(uid types.UID, after time.Duration)
}

// State is where a pod is in its lifecycle.
type State int

const (
	Syncing State = iota
	Terminating
	Terminated
)

func (s State) String() string {
	return [...]string{"syncing", "terminating", "terminated"}[s]
}
