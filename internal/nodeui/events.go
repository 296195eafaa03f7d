package nodeui

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultEvents is how many recent events the page keeps.
const DefaultEvents = 200

// Event is one event as the page lists it. Repeats of an event (same object, type, reason and
// message, e.g. BackOff) are counted on one entry, as the API server does.
type Event struct {
	FirstTime time.Time `json:"firstTime"`
	LastTime  time.Time `json:"lastTime"`
	Count     int       `json:"count"`
	Type      string    `json:"type"` // Normal or Warning
	Reason    string    `json:"reason"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	Message   string    `json:"message"`
}

// Events keeps the node's most recent events in memory, bounded, whether or not they also
// reach an API server. Feed it with an event broadcaster's StartEventWatcher(e.Add).
type Events struct {
	mu   sync.Mutex
	max  int
	list []Event // oldest first
	now  func() time.Time
}

// NewEvents keeps up to max events.
func NewEvents(max int) *Events {
	return &Events{max: max, now: time.Now}
}

// Add records ev; a repeat of a kept event moves it to the front with its count raised.
func (e *Events) Add(ev *v1.Event) {
	at := eventTime(ev, e.now)
	count := max(int(ev.Count), 1)
	in := Event{
		FirstTime: at, LastTime: at, Count: count, Type: ev.Type, Reason: ev.Reason,
		Kind: ev.InvolvedObject.Kind, Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name,
		Message: ev.Message,
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, old := range e.list {
		if old.Kind == in.Kind && old.Namespace == in.Namespace && old.Name == in.Name &&
			old.Type == in.Type && old.Reason == in.Reason && old.Message == in.Message {
			in.FirstTime, in.Count = old.FirstTime, old.Count+1
			e.list = append(e.list[:i], e.list[i+1:]...)
			break
		}
	}
	e.list = append(e.list, in)
	if len(e.list) > e.max {
		e.list = append(e.list[:0], e.list[len(e.list)-e.max:]...)
	}
}

// List returns the kept events, newest first.
func (e *Events) List() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Event, len(e.list))
	for i, ev := range e.list {
		out[len(out)-1-i] = ev
	}
	return out
}

// eventTime is when ev last happened: its last timestamp, else its event time, else now.
func eventTime(ev *v1.Event, now func() time.Time) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return now()
}
