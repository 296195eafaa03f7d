package shutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/klog/v2"
)

// Logind is what the manager needs from systemd-logind (logind.Conn).
type Logind interface {
	InhibitDelay() (time.Duration, error)
	InhibitShutdown(who, why string) (io.Closer, error)
	ReloadConfig() error
	WatchShutdown() (<-chan bool, error)
}

// Upstream's inhibitor lock owner and reason, which `systemd-inhibit --list` shows.
const (
	inhibitWho = "kubelet"
	inhibitWhy = "Kubelet needs time for critical node pods to shut down"
)

// ErrWatchEnded is Run's error when logind's signals stop (the bus went away).
var ErrWatchEnded = errors.New("the system bus connection ended")

// Budget is the whole time the shutdown takes: the sum of the groups' periods.
func (m *Manager) Budget() time.Duration {
	var total time.Duration
	for _, g := range m.groups {
		total += g.GracePeriod
	}
	return total
}

// Follower follows logind's lead once Follow has set it up.
type Follower struct {
	m      *Manager
	l      Logind
	events <-chan bool
	lock   io.Closer
}

// Follow sets up following logind, as upstream: it makes sure logind lets a delay lock hold
// the shutdown back for Budget (writing the drop-in through writeOverride and reloading logind
// when it does not), subscribes to PrepareForShutdown and takes the lock. Once it returns, a
// shutdown signal is not missed.
func (m *Manager) Follow(l Logind, writeOverride func(time.Duration) error) (*Follower, error) {
	if err := m.ensureDelay(l, writeOverride); err != nil {
		return nil, err
	}
	events, err := l.WatchShutdown()
	if err != nil {
		return nil, err
	}
	lock, err := l.InhibitShutdown(inhibitWho, inhibitWhy)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Holding logind's shutdown inhibitor lock", "delay", m.Budget())
	m.watching.Store(true)
	return &Follower{m: m, l: l, events: events, lock: lock}, nil
}

// Run acts on the signals until ctx ends or they stop (ErrWatchEnded): on
// PrepareForShutdown(true) it terminates the pods and releases the lock so the machine goes
// down; on false (the shutdown was cancelled) the node is back to normal and the lock is taken
// again. The lock is released, and the connection closed, when Run returns.
func (f *Follower) Run(ctx context.Context) error {
	m := f.m
	defer func() {
		m.watching.Store(false)
		if f.lock != nil {
			f.lock.Close()
		}
		if c, ok := f.l.(io.Closer); ok {
			c.Close() // the connection is the follower's
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case shuttingDown, ok := <-f.events:
			if !ok {
				return ErrWatchEnded
			}
			if shuttingDown {
				m.notify(EventShutdown)
				m.Shutdown(ctx)
				if f.lock != nil {
					f.lock.Close() // the machine may go down now
					f.lock = nil
				}
				klog.InfoS("Node shutdown: released logind's inhibitor lock")
				continue
			}
			m.notify(EventCancelled)
			m.resume()
			if f.lock == nil {
				lock, err := f.l.InhibitShutdown(inhibitWho, inhibitWhy)
				if err != nil {
					return err
				}
				f.lock = lock
			}
		}
	}
}

// Watching is true while a Follower holds logind's lock: a stop request (SIGTERM) is then a service stop,
// not a node shutdown, and leaves the pods running, as upstream.
func (m *Manager) Watching() bool { return m.watching.Load() }

// ensureDelay raises logind's InhibitDelayMaxSec to the budget when it is lower, as upstream.
func (m *Manager) ensureDelay(l Logind, writeOverride func(time.Duration) error) error {
	want := m.Budget()
	have, err := l.InhibitDelay()
	if err != nil || have >= want {
		return err
	}
	if err := writeOverride(want); err != nil {
		return fmt.Errorf("raising logind's InhibitDelayMaxSec to the shutdown's %v: %w", want, err)
	}
	if err := l.ReloadConfig(); err != nil {
		return err
	}
	if have, err = l.InhibitDelay(); err != nil {
		return err
	}
	if have < want {
		return fmt.Errorf("logind's InhibitDelayMaxSec is still %v after the override, less than the shutdown's %v (shutdownGracePeriod); set it in logind.conf", have, want)
	}
	return nil
}

// resume ends a shutdown that logind cancelled: the node is Ready and admits pods again.
func (m *Manager) resume() {
	if m.active.Swap(false) {
		klog.InfoS("Node shutdown cancelled; admitting pods again")
		if m.deps.StatusChanged != nil {
			m.deps.StatusChanged()
		}
	}
}

// Events the manager reports on the Node (reason NodeShutdown, upstream's texts).
const (
	EventReason    = "NodeShutdown"
	EventShutdown  = "Shutdown manager detected shutdown event"
	EventCancelled = "Shutdown manager detected shutdown cancellation"
)

func (m *Manager) notify(message string) {
	if m.deps.Event != nil {
		m.deps.Event(message)
	}
}
