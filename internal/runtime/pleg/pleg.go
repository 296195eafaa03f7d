// Package pleg is the pod lifecycle event generator: it relists the runtime on a period, diffs
// against the previous listing and emits one event per changed container or sandbox.
package pleg

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// EventType says what happened to a container.
type EventType string

const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerRemoved EventType = "ContainerRemoved"
	ContainerChanged EventType = "ContainerChanged"
)

// Event is one lifecycle change for a pod.
type Event struct {
	UID  types.UID
	Type EventType
	ID   string // container or sandbox ID
}

// Lister is the part of the runtime manager the PLEG needs.
type Lister interface {
	GetPods(ctx context.Context, all bool) ([]*container.RunningPod, error)
}

// relistThreshold is how long without a successful relist before the PLEG is unhealthy.
const relistThreshold = 3 * time.Minute

// PLEG relists the runtime. Run it once; read Events.
type PLEG struct {
	lister  Lister
	period  time.Duration
	timeout time.Duration
	events  chan Event
	relistC chan struct{}

	listing  *Listing            // what the last relist found
	onRelist func(time.Duration) // metrics hook, may be nil

	mu         sync.RWMutex
	last       map[string]entry // by container/sandbox ID
	lastRelist time.Time
}

// Listing is what the PLEG's last relist found on the runtime. It is made before the PLEG
// (New takes it), and so before the runtime the PLEG lists: the parts built before the
// runtime (the volume manager, which the runtime mounts through, and the device manager) read
// it at construction. It is empty until the first relist.
type Listing struct {
	mu       sync.RWMutex
	pods     []*container.RunningPod
	listedAt time.Time // when the listing in pods was requested
}

// NewListing returns an empty listing: no relist yet.
func NewListing() *Listing { return &Listing{} }

// RunningPods returns what the last relist found on the runtime, and when it started listing
// (zero before the first relist).
func (l *Listing) RunningPods() ([]*container.RunningPod, time.Time) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.pods, l.listedAt
}

func (l *Listing) set(pods []*container.RunningPod, listedAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pods, l.listedAt = pods, listedAt
}

type entry struct {
	uid   types.UID
	state container.ContainerState
}

// New returns a PLEG that relists every period into listing (nil: a Listing of its own);
// onRelist, when not nil, is called with each relist's duration.
func New(lister Lister, listing *Listing, period time.Duration, onRelist func(time.Duration)) *PLEG {
	if listing == nil {
		listing = NewListing()
	}
	return &PLEG{
		lister:   lister,
		listing:  listing,
		period:   period,
		onRelist: onRelist,
		timeout:  10 * time.Second,
		events:   make(chan Event, 4096),
		relistC:  make(chan struct{}, 1),
		last:     map[string]entry{},
	}
}

// Events is the stream of lifecycle events.
func (p *PLEG) Events() <-chan Event { return p.events }

// Trigger asks for a relist now, e.g. right after the sync loop changed something.
func (p *PLEG) Trigger() {
	select {
	case p.relistC <- struct{}{}:
	default:
	}
}

// Run relists until ctx ends.
func (p *PLEG) Run(ctx context.Context) error {
	t := time.NewTicker(p.period)
	defer t.Stop()
	for {
		p.Relist(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-p.relistC:
		}
	}
}

// Healthy reports an error when relisting has not succeeded for too long.
func (p *PLEG) Healthy() error {
	p.mu.RLock()
	last := p.lastRelist
	p.mu.RUnlock()
	if last.IsZero() {
		return nil // not started yet
	}
	if since := time.Since(last); since > relistThreshold {
		return fmt.Errorf("pleg was last seen active %v ago; threshold is %v", since.Round(time.Second), relistThreshold)
	}
	return nil
}

// RunningPods is the Listing's.
func (p *PLEG) RunningPods() ([]*container.RunningPod, time.Time) { return p.listing.RunningPods() }

// Relist lists the runtime once and emits events for what changed.
func (p *PLEG) Relist(ctx context.Context) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	pods, err := p.lister.GetPods(ctx, true)
	if err != nil {
		klog.ErrorS(err, "PLEG relist failed; will retry")
		return
	}
	current := index(pods)
	p.mu.Lock()
	old := p.last
	p.last, p.lastRelist = current, time.Now()
	p.mu.Unlock()
	p.listing.set(pods, start)
	for _, ev := range diff(old, current) {
		select {
		case p.events <- ev:
		default:
			klog.InfoS("PLEG event channel full; the periodic resync will catch up", "pod", ev.UID, "event", ev.Type)
		}
	}
	if p.onRelist != nil {
		p.onRelist(time.Since(start))
	}
}

func index(pods []*container.RunningPod) map[string]entry {
	out := map[string]entry{}
	for _, pod := range pods {
		for _, c := range pod.Containers {
			out[c.ID] = entry{uid: pod.UID, state: c.State}
		}
		for _, s := range pod.Sandboxes {
			state := container.StateExited
			if s.Ready {
				state = container.StateRunning
			}
			out[s.ID] = entry{uid: pod.UID, state: state}
		}
	}
	return out
}

func diff(old, current map[string]entry) []Event {
	var events []Event
	for id, now := range current {
		before, seen := old[id]
		if seen && before.state == now.state {
			continue
		}
		events = append(events, Event{UID: now.uid, ID: id, Type: eventFor(now.state)})
	}
	for id, before := range old {
		if _, ok := current[id]; !ok {
			events = append(events, Event{UID: before.uid, ID: id, Type: ContainerRemoved})
		}
	}
	return events
}

func eventFor(s container.ContainerState) EventType {
	switch s {
	case container.StateRunning:
		return ContainerStarted
	case container.StateExited:
		return ContainerDied
	default:
		return ContainerChanged
	}
}
