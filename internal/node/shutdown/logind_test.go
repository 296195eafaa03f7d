package shutdown

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// fakeLogind keeps what a real logind would: the delay limit, the configured override (read
// on reload), the locks held.
type fakeLogind struct {
	mu       sync.Mutex
	delay    time.Duration
	override time.Duration // what the drop-in says; 0 = none
	honour   bool          // a reload applies the drop-in
	held     int
	taken    int
	reloads  int
	events   chan bool
}

type fakeLock struct{ l *fakeLogind }

func (f fakeLock) Close() error {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	f.l.held--
	return nil
}

func (l *fakeLogind) InhibitDelay() (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delay, nil
}

func (l *fakeLogind) InhibitShutdown(who, why string) (io.Closer, error) {
	if who != "kubelet" || !strings.Contains(why, "shut down") {
		return nil, errors.New("unexpected owner")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held++
	l.taken++
	return fakeLock{l}, nil
}

func (l *fakeLogind) ReloadConfig() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reloads++
	if l.honour && l.override > 0 {
		l.delay = l.override
	}
	return nil
}

func (l *fakeLogind) WatchShutdown() (<-chan bool, error) { return l.events, nil }

func (l *fakeLogind) write(d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.override = d
	return nil
}

func (l *fakeLogind) locks() (held, taken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.taken
}

// logind's 5s default is raised to the 30s budget through the drop-in; the lock is held until
// PrepareForShutdown(true), released once the pods are gone, and taken again when the
// shutdown is cancelled, after which the node admits pods again. Each signal leaves a
// NodeShutdown event with upstream's text and posts the Ready condition at once.
func TestFollowLogind(t *testing.T) {
	l := &fakeLogind{delay: 5 * time.Second, honour: true, events: make(chan bool)}
	var mu sync.Mutex
	var killed, events []string
	statusPosts := 0
	pod := podWithPriority("web", 0, 30)
	m := New([]Group{{0, 20 * time.Second}, {2000000000, 10 * time.Second}}, Deps{
		ActivePods: func() []*v1.Pod { return []*v1.Pod{pod} },
		Kill: func(p *v1.Pod, _ int64, _ func(*v1.PodStatus)) {
			mu.Lock()
			defer mu.Unlock()
			killed = append(killed, p.Name)
		},
		Gone:          func(*v1.Pod) bool { return true },
		StatusChanged: func() { mu.Lock(); statusPosts++; mu.Unlock() },
		Event:         func(msg string) { mu.Lock(); events = append(events, msg); mu.Unlock() },
	})
	m.poll = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	f, err := m.Follow(l, l.write)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := l.locks(); h != 1 {
		t.Fatalf("Follow returned holding %d locks, want 1", h)
	}
	go func() { done <- f.Run(ctx) }()
	if l.override != 30*time.Second || l.reloads != 1 || l.delay != 30*time.Second {
		t.Errorf("override %v after %d reloads, delay %v: want 30s, 1, 30s", l.override, l.reloads, l.delay)
	}
	if m.Status() != nil || !m.Watching() {
		t.Fatalf("before any signal: status %v, watching %v", m.Status(), m.Watching())
	}

	l.events <- true
	testutil.Eventually(t, "the lock released after the shutdown", func() bool { h, _ := l.locks(); return h == 0 })
	mu.Lock()
	if len(killed) != 1 || m.Status() != ErrShuttingDown {
		t.Errorf("killed %v, status %v", killed, m.Status())
	}
	mu.Unlock()

	l.events <- false
	testutil.Eventually(t, "the lock taken again after the cancel", func() bool { h, n := l.locks(); return h == 1 && n == 2 })
	if m.Status() != nil {
		t.Errorf("still shutting down after the cancel: %v", m.Status())
	}
	if ok, _, _ := m.Admit(pod); !ok {
		t.Error("a cancelled shutdown still refuses pods")
	}
	mu.Lock()
	if len(events) != 2 || events[0] != "Shutdown manager detected shutdown event" || events[1] != "Shutdown manager detected shutdown cancellation" {
		t.Errorf("events %q", events)
	}
	if statusPosts != 2 {
		t.Errorf("Ready posted %d times, want at the shutdown and at the cancel", statusPosts)
	}
	mu.Unlock()

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after ctx ended: %v", err)
	}
	if h, _ := l.locks(); h != 0 || m.Watching() {
		t.Errorf("%d locks still held (watching %v) after Run returned", h, m.Watching())
	}
}

// A logind that keeps a lower limit after the reload stops the watch with an error naming
// both durations, and no lock is taken; a closed signal channel ends it with ErrWatchEnded.
func TestFollowFailures(t *testing.T) {
	m := New([]Group{{0, 45 * time.Second}}, Deps{ActivePods: func() []*v1.Pod { return nil }})
	stubborn := &fakeLogind{delay: 5 * time.Second, events: make(chan bool)}
	_, err := m.Follow(stubborn, stubborn.write)
	if err == nil || !strings.Contains(err.Error(), "5s") || !strings.Contains(err.Error(), "45s") {
		t.Errorf("err %v, want one naming 5s and 45s", err)
	}
	if _, taken := stubborn.locks(); taken != 0 {
		t.Errorf("took %d locks with too short a delay", taken)
	}

	enough := &fakeLogind{delay: time.Minute, events: make(chan bool)}
	close(enough.events)
	f, err := m.Follow(enough, enough.write)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Run(context.Background()); !errors.Is(err, ErrWatchEnded) {
		t.Errorf("err %v, want ErrWatchEnded", err)
	}
	if enough.reloads != 0 || enough.override != 0 {
		t.Errorf("touched logind's config although its delay was enough")
	}
	if h, _ := enough.locks(); h != 0 {
		t.Errorf("lock still held after the watch ended")
	}
}
