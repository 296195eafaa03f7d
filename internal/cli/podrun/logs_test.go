package podrun

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// Each container's lines come out whole and prefixed with its name (padded to the longest),
// partial entries joined, both streams, attempt after attempt; Drain copies what is left.
func TestLogStreamerPrefixesAndFollowsRestarts(t *testing.T) {
	dir := t.TempDir()
	var out syncBuffer
	s := NewLogStreamer(dir, []string{"init", "app"}, &out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	appendLog(t, dir, "init", 0, criLine("stdout", "F", "preparing"))
	appendLog(t, dir, "app", 0, criLine("stdout", "P", "hel"), criLine("stdout", "F", "lo"), criLine("stderr", "F", "oops"))
	testutil.Eventually(t, "attempt 0 copied", func() bool { return len(out.lines()) == 3 })
	appendLog(t, dir, "app", 0, criLine("stdout", "F", "last words of attempt 0"))
	appendLog(t, dir, "app", 1, criLine("stdout", "F", "restarted"))
	testutil.Eventually(t, "attempt 1 copied", func() bool { return len(out.lines()) == 5 })
	appendLog(t, dir, "app", 1, criLine("stdout", "P", "no newline at the end"))

	s.Drain()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the streamer did not finish after Drain")
	}
	lines := out.lines()
	var app []string
	for _, l := range lines {
		if len(l) > 7 && l[:7] == "app  | " {
			app = append(app, l[7:])
		}
	}
	want := []string{"hello", "oops", "last words of attempt 0", "restarted", "no newline at the end"}
	if !slices.Equal(app, want) || !slices.Contains(lines, "init | preparing") {
		t.Errorf("output:\n%s\nwant app lines %q and %q", out.String(), want, "init | preparing")
	}
}

// A container that never got a log file does not hold up draining.
func TestLogStreamerDrainsWithoutLogs(t *testing.T) {
	s := NewLogStreamer(t.TempDir(), []string{"never-started"}, &syncBuffer{})
	s.Drain()
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Drained():
	default:
		t.Fatal("Drained not closed after Run returned")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stdout closed") }

// A failure to write the output ends the streamer with it.
func TestLogStreamerStopsOnOutputFailure(t *testing.T) {
	dir := t.TempDir()
	appendLog(t, dir, "app", 0, criLine("stdout", "F", "hello"))
	s := NewLogStreamer(dir, []string{"app"}, failingWriter{})
	err := s.Run(context.Background())
	if err == nil || err.Error() != "stdout closed" {
		t.Fatalf("Run: %v, want the write error", err)
	}
}
