package kuberuntime

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// killOrder makes a pod's sidecars stop after its app containers, and in reverse spec order
// among themselves, as upstream: every container's kill starts at once (preStop hooks
// included), but a sidecar's StopContainer waits until the app containers and the sidecars
// after it have stopped, or until its grace period is used up. What it waited comes out of
// its own grace period, so the whole pod stops within the grace period (plus the minimum).
type killOrder struct {
	mu      sync.Mutex
	left    map[string]int             // instances of each container still to be stopped
	stopped map[string]chan struct{}   // closed once every instance of the container stopped
	waitFor map[string][]chan struct{} // per sidecar, what must stop before it
}

// newKillOrder returns the order for stopping toStop, nil when the pod has no sidecars (or
// its spec is unknown): then everything stops at once.
func newKillOrder(pod *v1.Pod, toStop []*container.ContainerStatus) *killOrder {
	if pod == nil || !sidecar.Has(pod) {
		return nil
	}
	o := &killOrder{left: map[string]int{}, stopped: map[string]chan struct{}{}, waitFor: map[string][]chan struct{}{}}
	for _, c := range toStop {
		o.left[c.Name]++
	}
	var apps []chan struct{}
	for _, c := range pod.Spec.Containers {
		apps = append(apps, o.channel(c.Name))
	}
	var later []chan struct{} // the next sidecar in spec order, stopped before this one
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		if !sidecar.Is(c) {
			continue
		}
		o.waitFor[c.Name] = append(slices.Clone(apps), later...)
		later = []chan struct{}{o.channel(c.Name)}
	}
	return o
}

// channel is closed once the named container has stopped; at once when it does not run.
func (o *killOrder) channel(name string) chan struct{} {
	ch := make(chan struct{})
	if o.left[name] == 0 {
		close(ch)
	}
	o.stopped[name] = ch
	return ch
}

// wait blocks until it is the named container's turn to stop, or for at most limit, and
// returns how long it waited.
func (o *killOrder) wait(name string, limit time.Duration) time.Duration {
	if o == nil || len(o.waitFor[name]) == 0 {
		return 0
	}
	start := time.Now()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for _, ch := range o.waitFor[name] {
		select {
		case <-ch:
		case <-timer.C:
			return time.Since(start)
		}
	}
	return time.Since(start)
}

// done records that one instance of the named container stopped.
func (o *killOrder) done(name string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.left[name]--; o.left[name] == 0 {
		if ch, ok := o.stopped[name]; ok {
			close(ch)
		}
	}
}
