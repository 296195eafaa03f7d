// Package runonce is nodelet's --runonce mode: start the pods the static sources name, wait
// until each runs or finishes, print their status and return, leaving them running.
package runonce

import (
	"context"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/source"
)

// sourceWait bounds the wait for every source's first report.
const sourceWait = 30 * time.Second

// podWait bounds the wait for one pod to run or finish; its sync is retried every retryEvery.
const podWait, retryEvery = 5 * time.Minute, time.Second

// Deps are what run-once reads and drives: the merged pod sources, the per-pod sync and the
// statuses it records.
type Deps struct {
	Updates <-chan source.PodUpdate
	// SourcesSeen reports whether every configured source has reported once.
	SourcesSeen func() bool
	SyncPod     func(ctx context.Context, pod *v1.Pod) (podworkers.Outcome, error)
	Status      func(uid types.UID) (v1.PodStatus, bool)
	// Out receives the status table.
	Out io.Writer
}

// Run starts the pods the static sources name, waits until each is running or finished,
// prints their status, and returns. The pods are left running, as upstream's --runonce does.
func Run(ctx context.Context, d Deps) error {
	pods, err := d.firstSnapshot(ctx)
	if err != nil {
		return err
	}
	klog.InfoS("Run once: starting pods", "count", len(pods))
	phases := make([]v1.PodPhase, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			phases[i] = d.runPod(ctx, p)
		}()
	}
	wg.Wait()
	failed := 0
	for _, phase := range phases {
		if phase != v1.PodRunning && phase != v1.PodSucceeded {
			failed++
		}
	}
	d.printStatuses(pods)
	if failed > 0 {
		return fmt.Errorf("run once: %d of %d pods did not reach Running or Succeeded", failed, len(pods))
	}
	return nil
}

// firstSnapshot collects ADD updates until every source has reported once.
func (d Deps) firstSnapshot(ctx context.Context) ([]*v1.Pod, error) {
	var pods []*v1.Pod
	timeout := time.After(sourceWait)
	for !d.SourcesSeen() || len(d.Updates) > 0 {
		select {
		case u := <-d.Updates:
			if u.Op == source.ADD {
				pods = append(pods, u.Pods...)
			}
		case <-timeout:
			return nil, fmt.Errorf("run once: pod sources did not report within %v", sourceWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return pods, nil
}

func (d Deps) runPod(ctx context.Context, p *v1.Pod) v1.PodPhase {
	deadline := time.Now().Add(podWait)
	for {
		out, err := d.SyncPod(ctx, p)
		if err != nil {
			klog.ErrorS(err, "Run once: sync failed; retrying", "pod", klog.KObj(p))
		}
		st, _ := d.Status(p.UID)
		if st.Phase == v1.PodRunning || out.Terminal || time.Now().After(deadline) || ctx.Err() != nil {
			return st.Phase
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryEvery):
		}
	}
}

func (d Deps) printStatuses(pods []*v1.Pod) {
	w := tabwriter.NewWriter(d.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tPHASE\tIP\tCONTAINERS")
	for _, p := range pods {
		st, _ := d.Status(p.UID)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, st.Phase, st.PodIP, containerSummary(st))
	}
	_ = w.Flush()
}

func containerSummary(st v1.PodStatus) string {
	out := ""
	for _, cs := range st.ContainerStatuses {
		state := "waiting"
		switch {
		case cs.State.Running != nil:
			state = "running"
		case cs.State.Terminated != nil:
			state = fmt.Sprintf("exited(%d)", cs.State.Terminated.ExitCode)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			state = cs.State.Waiting.Reason
		}
		if out != "" {
			out += " "
		}
		out += cs.Name + "=" + state
	}
	return out
}
