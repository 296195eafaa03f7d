package pleg

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// scriptedWatcher returns each scripted outcome in turn, reporting the given exits first.
type scriptedWatcher struct {
	mu      sync.Mutex
	calls   int
	results []watchResult
}

type watchResult struct {
	exits []string
	err   error
}

func (w *scriptedWatcher) WatchExits(ctx context.Context, exited func(string)) error {
	w.mu.Lock()
	r := w.results[min(w.calls, len(w.results)-1)]
	w.calls++
	w.mu.Unlock()
	for _, id := range r.exits {
		exited(id)
	}
	if r.err == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	return r.err
}

func TestWatchExitsRelistsAfterEachExitAndResubscribes(t *testing.T) {
	w := &scriptedWatcher{results: []watchResult{
		{exits: []string{"a"}, err: errors.New("stream reset")},
		{exits: []string{"b"}},
	}}
	relists := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { watchExits(ctx, w, func() { relists <- struct{}{} }, time.Second); close(done) }()
	// Two exits, each followed by one relist per delay; the second comes after a resubscribe.
	want := 2 * len(exitRelistDelays)
	for i := 0; i < want; i++ {
		select {
		case <-relists:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d relists came", i, want)
		}
	}
	cancel()
	<-done
	if w.calls != 2 {
		t.Fatalf("subscribed %d times, want 2 (once more after the stream broke)", w.calls)
	}
}

func TestWatchExitsGivesUpWithoutEvents(t *testing.T) {
	w := &scriptedWatcher{results: []watchResult{{err: container.ErrNoExitEvents}}}
	done := make(chan struct{})
	go func() {
		watchExits(context.Background(), w, func() { t.Error("relist without an exit") }, time.Second)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("watchExits kept going without an event stream")
	}
	if w.calls != 1 {
		t.Fatalf("subscribed %d times, want 1", w.calls)
	}
}
