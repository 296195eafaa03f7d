package podworkers

import (
	"fmt"
	"runtime/debug"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
)

// Back-off of a pod whose sync panicked: from the usual error retry up to the crash-loop
// ceiling, so a pod that always panics costs the node little while it is still retried.
const (
	panicBackoffInitial = retryAfterError
	panicBackoffMax     = 5 * time.Minute
)

// reasonFailedSync is upstream's event reason for a pod sync that failed.
const reasonFailedSync = "FailedSync"

// contain runs one sync step of w's pod. A panic in it (a bug reached through one pod's spec
// or state) is recovered so the node and the other pods carry on: it is logged with its stack,
// posted on the pod, and the returned delay says when to try again (growing on each panic).
func (p *PodWorkers) contain(w *worker, pod *v1.Pod, logger klog.Logger, step func()) (retryIn time.Duration, panicked bool) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		panicked = true
		id := string(w.uid)
		p.backoff.Next(id, p.backoff.Clock.Now())
		retryIn = p.backoff.Get(id)
		logger.Error(fmt.Errorf("panic: %v", r), "Syncing pod panicked; will retry", "pod", klog.KObj(pod),
			"retryIn", retryIn, "stack", string(debug.Stack()))
		if p.recorder != nil && pod != nil {
			p.recorder.Eventf(pod, v1.EventTypeWarning, reasonFailedSync,
				"panic while syncing pod: %v; retrying in %s", r, retryIn)
		}
	}()
	step()
	return 0, false
}

func newPanicBackoff() *flowcontrol.Backoff {
	return flowcontrol.NewBackOff(panicBackoffInitial, panicBackoffMax)
}
