// Package watchdog feeds systemd's service watchdog as the upstream kubelet does: when the
// unit sets WatchdogSec, WATCHDOG=1 every half of it while nodelet's health checks (those of
// /healthz) pass, so systemd restarts a nodelet that hangs. Messages go to $NOTIFY_SOCKET
// through go-systemd's sd_notify (READY=1 is internal/node/daemon's).
package watchdog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/server/healthz"
)

// minTimeout is the shortest WatchdogSec accepted, as upstream: below it a busy node would be
// killed for a late ping.
const minTimeout = time.Second

// retry is how a failed ping is retried within one round, as upstream: 1s then 2s.
var retry = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 2}

// notify sends one state to systemd; it says false when there is no NOTIFY_SOCKET.
type notify func(state string) (bool, error)

func sdNotify(state string) (bool, error) { return daemon.SdNotify(false, state) }

// Watchdog pings systemd's watchdog while the checks pass.
type Watchdog struct {
	interval time.Duration
	checks   map[string]healthz.Check
	notify   notify
}

// New reads the unit's watchdog (WATCHDOG_USEC, for this process when WATCHDOG_PID says so).
// It returns nil when there is none, and an error, stopping nodelet as upstream, for a value
// systemd would not give or one of a second or less.
func New(checks map[string]healthz.Check) (*Watchdog, error) {
	timeout, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return nil, fmt.Errorf("configure watchdog: %w", err)
	}
	if timeout == 0 {
		klog.V(2).InfoS("Systemd watchdog is not enabled")
		return nil, nil
	}
	if timeout <= minTimeout {
		return nil, fmt.Errorf("configure watchdog timeout too small: %v (WatchdogSec must be more than 1s)", timeout)
	}
	return &Watchdog{interval: timeout / 2, checks: checks, notify: sdNotify}, nil
}

// Run pings at once and then every half of the watchdog timeout after the last round, until
// ctx ends. A round whose checks fail sends nothing, so systemd restarts a nodelet that stays
// unhealthy for the whole timeout.
func (w *Watchdog) Run(ctx context.Context) error {
	klog.InfoS("Starting systemd watchdog", "interval", w.interval)
	wait.UntilWithContext(ctx, w.round, w.interval)
	return nil
}

func (w *Watchdog) round(ctx context.Context) {
	if err := w.check(); err != nil {
		klog.ErrorS(err, "Not notifying the systemd watchdog this round: nodelet is not healthy")
		return
	}
	err := wait.ExponentialBackoffWithContext(ctx, retry, func(context.Context) (bool, error) {
		sent, err := w.notify(daemon.SdNotifyWatchdog)
		if err != nil {
			klog.V(5).InfoS("Notifying the systemd watchdog failed; retrying", "err", err)
			return false, nil
		}
		if !sent {
			return false, fmt.Errorf("NOTIFY_SOCKET is not set")
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		klog.ErrorS(err, "Failed to notify the systemd watchdog")
	}
}

// check runs the checks in name order and returns the first failure.
func (w *Watchdog) check() error {
	for _, name := range slices.Sorted(maps.Keys(w.checks)) {
		if err := w.checks[name](); err != nil {
			return fmt.Errorf("check %s failed: %w", name, err)
		}
	}
	return nil
}
