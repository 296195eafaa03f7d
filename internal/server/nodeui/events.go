package nodeui

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// DefaultEvents is how many recent events the page keeps.
const DefaultEvents = 200

// DefaultEventBytes bounds the kept events' text: messages quote what pods print, so a count
// alone bounds nothing. 1 MiB holds DefaultEvents events of 5 KiB each; longer ones leave room
// for fewer.
const DefaultEventBytes = 1 << 20

// eventOverhead is what an entry costs besides its strings (times, count, slice headers).
const eventOverhead = 128

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
	mu       sync.Mutex
	max      int
	maxBytes int
	bytes    int     // size of list
	list     []Event // oldest first
	now      func() time.Time
}

// NewEvents keeps up to max events, together no larger than DefaultEventBytes.
func NewEvents(max int) *Events {
	return &Events{max: max, maxBytes: DefaultEventBytes, now: time.Now}
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
			e.list = slices.Delete(e.list, i, i+1)
			e.bytes -= old.size()
			break
		}
	}
	e.list = append(e.list, in)
	e.bytes += in.size()
	// Drop the oldest past either bound; the newest stays even alone over the byte bound.
	drop := 0
	for len(e.list)-drop > 1 && (len(e.list)-drop > e.max || e.bytes > e.maxBytes) {
		e.bytes -= e.list[drop].size()
		drop++
	}
	e.list = slices.Delete(e.list, 0, drop) // zeroes the freed tail: no message kept past its entry
}

// size is roughly what ev holds in memory.
func (ev *Event) size() int {
	return eventOverhead + len(ev.Type) + len(ev.Reason) + len(ev.Kind) + len(ev.Namespace) + len(ev.Name) + len(ev.Message)
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
