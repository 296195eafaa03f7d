// Package podrun is `nodelet run -f pod.yaml`: running one pod manifest in the foreground
// (the pod's logs streamed, the process ending with the pod) or handing it to the nodelet
// daemon of this node through its static pod directory.
package podrun

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// Pod is the one pod a foreground run drives, as the node agent (internal/app) runs it.
type Pod interface {
	// Status is the pod's latest status; false before the first sync.
	Status() (v1.PodStatus, bool)
	// Timeline is what happened to the pod so far.
	Timeline() (timeline.Timeline, bool)
	// Done reports whether the pod's containers have stopped for good: it finished, was
	// refused, or was stopped.
	Done() bool
	// Stop kills the pod as a graceful deletion does (preStop hooks, then its grace period)
	// and returns once its containers are stopped.
	Stop(ctx context.Context) error
	// Remove deletes the pod's containers, sandbox and files (its logs too) and returns once
	// they are gone.
	Remove(ctx context.Context) error
}

// Timing of a foreground run; variables so tests can shorten them.
var (
	donePoll = 100 * time.Millisecond
	// stopMargin is how long past the grace period a stop may take (stopping the sandbox,
	// the runtime's own time) before the run gives up on it.
	stopMargin = 30 * time.Second
	// drainTimeout bounds copying what is left of the logs once the pod stopped.
	drainTimeout = 10 * time.Second
	// removeTimeout bounds removing the pod from the runtime.
	removeTimeout = time.Minute
)

// Foreground runs one pod in this process: it streams the containers' logs to Logs (each
// line prefixed with the container's name) and one line per lifecycle step to Events, waits
// until the pod ends or ctx ends (then stops it gracefully), and removes the pod.
type Foreground struct {
	Pod        *v1.Pod // as the agent runs it (name with the node suffix, UID)
	PodLogsDir string  // where the runtime keeps pod logs (podLogsDir, /var/log/pods)
	Logs       io.Writer
	Events     io.Writer
}

// Result is how a foreground run ended.
type Result struct {
	Status v1.PodStatus
	// Interrupted: ctx ended (a signal) before the pod did, and the run stopped it.
	Interrupted bool
}

// LogDir is the pod's log directory, as the runtime manager names it.
func LogDir(podLogsDir string, pod *v1.Pod) string {
	return filepath.Join(podLogsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// Drive runs the pod to its end (or until ctx ends, then stops it) and removes it. The pod's
// logs are copied out before it is removed.
func (f *Foreground) Drive(ctx context.Context, p Pod) (Result, error) {
	watchCtx, stopWatching := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatching()
	streamer := NewLogStreamer(LogDir(f.PodLogsDir, f.Pod), containerNames(f.Pod), f.Logs)
	steps := newStepPrinter(f.Events, p)
	var g errgroup.Group
	g.Go(func() error { return streamer.Run(watchCtx) })
	g.Go(func() error { steps.Run(watchCtx); return nil })

	res, err := f.await(ctx, p)
	streamer.Drain()
	select {
	case <-streamer.Drained():
	case <-time.After(drainTimeout):
		fmt.Fprintf(f.Events, "gave up copying the rest of the logs after %v\n", drainTimeout)
	}
	stopWatching()
	if werr := g.Wait(); werr != nil {
		fmt.Fprintf(f.Events, "streaming the logs failed: %v\n", werr)
	}
	if !res.Interrupted && err == nil {
		fmt.Fprintln(f.Events, describeEnd(f.Pod, res.Status))
	}
	if rerr := f.remove(ctx, p); err == nil {
		err = rerr
	}
	return res, err
}

// await waits until the pod is done, or until ctx ends and then stops it.
func (f *Foreground) await(ctx context.Context, p Pod) (Result, error) {
	done := func(context.Context) (bool, error) { return p.Done(), nil }
	if wait.PollUntilContextCancel(ctx, donePoll, true, done) != nil {
		return f.stop(ctx, p)
	}
	st, _ := p.Status()
	return Result{Status: st}, nil
}

// stop kills the pod gracefully after ctx ended.
func (f *Foreground) stop(ctx context.Context, p Pod) (Result, error) {
	grace := time.Duration(gracePeriod(f.Pod)) * time.Second
	fmt.Fprintf(f.Events, "stopping pod %s/%s (%v; grace period %v)\n", f.Pod.Namespace, f.Pod.Name, context.Cause(ctx), grace)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+stopMargin)
	defer cancel()
	err := p.Stop(stopCtx)
	if err != nil {
		err = fmt.Errorf("stopping pod %s/%s: %w", f.Pod.Namespace, f.Pod.Name, err)
	}
	st, _ := p.Status()
	return Result{Status: st, Interrupted: true}, err
}

func (f *Foreground) remove(ctx context.Context, p Pod) error {
	removeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	if err := p.Remove(removeCtx); err != nil {
		return fmt.Errorf("removing pod %s/%s (its containers may be left in the runtime; a nodelet daemon removes them at its start): %w",
			f.Pod.Namespace, f.Pod.Name, err)
	}
	fmt.Fprintf(f.Events, "pod %s/%s removed\n", f.Pod.Namespace, f.Pod.Name)
	return nil
}

func gracePeriod(pod *v1.Pod) int64 {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return v1.DefaultTerminationGracePeriodSeconds
}

// containerNames are the pod's init and app containers, in spec order.
func containerNames(pod *v1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}
