// This file holds the pod `nodelet run --wait` runs in the foreground: the Pod handle
// over the daemon's machinery (its status, timeline and worker state; stop and remove through
// its single source), and the log service limited to its logs. app builds the machinery.

package podrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// podStatePoll is how often a foreground pod's worker state is looked at while waiting.
const podStatePoll = 100 * time.Millisecond

// LogsUnder is the runtime's log service limited to the containers logging under Dir, so a
// foreground run rotates only its pod's logs.
type LogsUnder struct {
	container.LogService
	Dir string
}

func (l LogsUnder) RunningContainerLogs(ctx context.Context) ([]*container.ContainerLog, error) {
	all, err := l.LogService.RunningContainerLogs(ctx)
	var mine []*container.ContainerLog
	for _, c := range all {
		if strings.HasPrefix(c.Path, l.Dir) {
			mine = append(mine, c)
		}
	}
	return mine, err
}

// Deps are the parts of the running machinery a foreground pod is seen and driven through.
type Deps struct {
	Pod *v1.Pod
	// Source is the pod's only source: deleting or removing the pod goes through it.
	Source   *source.SinglePod
	Workers  *podworkers.PodWorkers
	Statuses func(uid types.UID) (v1.PodStatus, bool)
	Timeline *timeline.Recorder
	// Stopped is closed when the machinery stops; StopErr then says why.
	Stopped <-chan struct{}
	StopErr func() error
}

// LocalPod is podrun.Pod for the one pod `nodelet run --wait` runs in its own process.
type LocalPod struct{ Deps }

var _ Pod = (*LocalPod)(nil)

// NewLocalPod is the handle on d.Pod.
func NewLocalPod(d Deps) *LocalPod { return &LocalPod{d} }

func (p *LocalPod) Status() (v1.PodStatus, bool) { return p.Statuses(p.Pod.UID) }

func (p *LocalPod) Timeline() (timeline.Timeline, bool) {
	return p.Deps.Timeline.Get(p.Pod.Namespace, p.Pod.Name)
}

// Done: the worker finished the pod (terminated, or removed), or admission refused it (no
// worker, status Failed).
func (p *LocalPod) Done() bool {
	if state, ok := p.Workers.State(p.Pod.UID); ok {
		return state == podworkers.Terminated
	}
	if _, removed := p.Workers.FinishedAt(p.Pod.UID); removed {
		return true
	}
	st, ok := p.Status()
	return ok && (st.Phase == v1.PodFailed || st.Phase == v1.PodSucceeded)
}

func (p *LocalPod) Stop(ctx context.Context) error {
	p.Source.Delete(time.Now())
	return p.waitFor(ctx, "stopped", p.Done)
}

func (p *LocalPod) Remove(ctx context.Context) error {
	p.Source.Remove()
	return p.waitFor(ctx, "removed", func() bool {
		_, removed := p.Workers.FinishedAt(p.Pod.UID)
		return removed
	})
}

// waitFor polls cond until it holds, ctx ends, or the machinery stops.
func (p *LocalPod) waitFor(ctx context.Context, what string, cond func() bool) error {
	ticker := time.NewTicker(podStatePoll)
	defer ticker.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod not %s in time: %w", what, context.Cause(ctx))
		case <-p.Stopped:
			return p.StopErr()
		case <-ticker.C:
		}
	}
	return nil
}
