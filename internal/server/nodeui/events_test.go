package nodeui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podEvent(name, reason, message string, at time.Time) *v1.Event {
	return &v1.Event{
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name},
		Type:           v1.EventTypeWarning, Reason: reason, Message: message,
		LastTimestamp: metav1.NewTime(at), Count: 1,
	}
}

func TestEventsAreBoundedNewestFirstAndRepeatsCounted(t *testing.T) {
	e := NewEvents(3)
	at := time.Unix(1_700_000_000, 0)
	e.Add(podEvent("a", "BackOff", "Back-off restarting failed container", at))
	e.Add(podEvent("b", "Unhealthy", "Readiness probe failed", at.Add(time.Second)))
	e.Add(podEvent("a", "BackOff", "Back-off restarting failed container", at.Add(2*time.Second)))
	got := e.List()
	if len(got) != 2 || got[0].Name != "a" || got[0].Count != 2 || !got[0].FirstTime.Equal(at) || !got[0].LastTime.Equal(at.Add(2*time.Second)) {
		t.Fatalf("events %+v: want the repeat counted on one entry, moved to the front", got)
	}
	if got[1].Name != "b" || got[1].Kind != "Pod" || got[1].Namespace != "ns" || got[1].Type != v1.EventTypeWarning {
		t.Errorf("second event %+v", got[1])
	}
	for i := range 5 {
		e.Add(podEvent(fmt.Sprint("p", i), "Started", "Started container", at.Add(time.Duration(10+i)*time.Second)))
	}
	got = e.List()
	if len(got) != 3 || got[0].Name != "p4" || got[2].Name != "p2" {
		t.Errorf("after overflow: %+v, want p4, p3, p2", got)
	}
}

func TestEventWithoutTimestampIsDatedWhenSeen(t *testing.T) {
	e := NewEvents(10)
	now := time.Unix(1_700_000_500, 0)
	e.now = func() time.Time { return now }
	ev := podEvent("a", "Pulled", "Container image already present", time.Time{})
	ev.LastTimestamp = metav1.Time{}
	e.Add(ev)
	if got := e.List(); !got[0].LastTime.Equal(now) || got[0].Count != 1 {
		t.Errorf("event %+v, want dated %v", got[0], now)
	}
}

// Events whose messages are large are bounded by their bytes, not only by their count: the
// oldest go first, and the newest stays even when it alone is over the bound.
func TestEventsAreBoundedInBytes(t *testing.T) {
	e := NewEvents(200)
	e.maxBytes = 64 << 10
	at := time.Unix(1_700_000_000, 0)
	for i := range 100 {
		e.Add(podEvent(fmt.Sprint("p", i), "Unhealthy", fmt.Sprint(i, strings.Repeat("x", 10<<10)), at.Add(time.Duration(i)*time.Second)))
	}
	got := e.List()
	total := 0
	for _, ev := range got {
		total += len(ev.Message)
	}
	if len(got) != 6 || got[0].Name != "p99" || total > 64<<10 || e.bytes > 64<<10 {
		t.Errorf("kept %d events (newest %s) of %d message bytes, accounted %d; want the newest 6 within 64 KiB", len(got), got[0].Name, total, e.bytes)
	}
	e.Add(podEvent("huge", "Unhealthy", strings.Repeat("y", 1<<20), at.Add(time.Hour)))
	if got := e.List(); len(got) != 1 || got[0].Name != "huge" {
		t.Errorf("after an event over the bound: %d events, want only it", len(got))
	}
	e.Add(podEvent("small", "Started", "Started container", at.Add(2*time.Hour)))
	if got := e.List(); len(got) != 1 || got[0].Name != "small" {
		t.Errorf("after a small event: %d events, want the small one alone", len(got))
	}
}
