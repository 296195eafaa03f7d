package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Only the node's RequestReceived events inside the window count, read from the offset on.
func TestCountRequestsReadsTheNodesEventsInTheWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	event := func(stage, verb, user string, at time.Time) string {
		return `{"kind":"Event","stage":"` + stage + `","verb":"` + verb + `","user":{"username":"` + user +
			`"},"requestReceivedTimestamp":"` + at.Format(time.RFC3339Nano) + `"}` + "\n"
	}
	before := event("RequestReceived", "get", "system:node:bench-node", t0.Add(-time.Hour)) // before the offset
	lines := []string{
		event("RequestReceived", "watch", "system:node:bench-node", t0.Add(time.Second)),
		event("RequestReceived", "get", "system:node:bench-node", t0.Add(2*time.Second)),
		event("RequestReceived", "watch", "system:node:bench-node", t0.Add(3*time.Second)),
		event("ResponseComplete", "get", "system:node:bench-node", t0.Add(3*time.Second)), // another stage
		event("RequestReceived", "get", "system:node:other", t0.Add(4*time.Second)),       // another user
		event("RequestReceived", "patch", "system:node:bench-node", t0.Add(-time.Second)), // before the window
		event("RequestReceived", "patch", "system:node:bench-node", t0.Add(time.Minute)),  // after it
		"not json\n",
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(before+strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	load, err := countRequests(path, int64(len(before)), "system:node:bench-node", t0, t0.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if load.total != 3 || load.perMin != 6 || load.verbs() != "watch 2, get 1" {
		t.Errorf("got %d requests, %.1f a minute, %q; want 3, 6, \"watch 2, get 1\"", load.total, load.perMin, load.verbs())
	}
	if _, err := countRequests(path, 1<<20, "system:node:bench-node", t0, t0.Add(time.Minute)); err == nil {
		t.Error("an offset past the end (a rotated log) was not refused")
	}
}
