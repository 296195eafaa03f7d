package pleg

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// exitRelistDelays are when, after a container exit event, the PLEG relists. containerd's
// event comes before its CRI plugin has recorded the exit, so one relist right away could
// still see the container running; the later ones catch a slow update.
var exitRelistDelays = []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond}

// exitWatchRetry bounds the wait before resubscribing after the event stream broke.
const exitWatchRetry = 30 * time.Second

// WatchExits relists soon after each container exit, so restarts and status follow a death
// within a fraction of a second instead of up to a relist period. Relisting alone stays the
// source of truth; this only makes it come sooner. It returns nil when ctx ends, or at once
// when the runtime streams no exit events: a broken stream is retried, never a failure.
func (p *PLEG) WatchExits(ctx context.Context, w container.ExitWatcher) error {
	watchExits(ctx, w, p.Trigger, p.period)
	return nil
}

func watchExits(ctx context.Context, w container.ExitWatcher, relist func(), period time.Duration) {
	wait := time.Second
	for {
		began := time.Now()
		err := w.WatchExits(ctx, func(string) {
			for _, d := range exitRelistDelays {
				time.AfterFunc(d, relist)
			}
		})
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, container.ErrNoExitEvents) {
			klog.InfoS("The runtime streams no container exit events; exits are found by relisting", "period", period)
			return
		}
		if time.Since(began) > exitWatchRetry {
			wait = time.Second
		}
		klog.ErrorS(err, "Container exit events stream ended; relisting finds exits meanwhile", "retryIn", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, exitWatchRetry)
	}
}
