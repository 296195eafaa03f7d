package eviction

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// cleanupEnv runs a manager whose node stays short of memory, with a BestEffort pod (ranked
// first) and a Guaranteed one. Evicting a pod takes it out of the active pods; whether it is
// cleaned up is the returned flag.
func cleanupEnv(t *testing.T) (e *env, evictions chan string, cleaned *atomic.Bool) {
	evictions, cleaned = make(chan string, 4), &atomic.Bool{}
	e = newEnv(t, Config{Hard: map[string]string{"memory.available": "1Gi"}}, func(d *Deps) {
		d.Evict = func(p *v1.Pod, _ int64, _ Eviction) { // on Run's goroutine, as ActivePods
			e.pods = slices.DeleteFunc(e.pods, func(q *v1.Pod) bool { return q == p })
			evictions <- p.Name
		}
		d.CleanedUp = func(*v1.Pod) bool { return cleaned.Load() }
	})
	e.sum.memAvail = 500 * mi
	e.addPod("guaranteed", 0, 100*mi, 100*mi)
	e.addPod("besteffort", 0, 300*mi, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if got := nextEviction(t, evictions); got != "besteffort" {
		t.Fatalf("first eviction %s, want besteffort", got)
	}
	return e, evictions, cleaned
}

// stepSeconds steps the fake clock one second at a time, each once Run waits on it, and with
// a memory crossing signalled before each step.
func stepSeconds(t *testing.T, e *env, n int) {
	t.Helper()
	for range n {
		testutil.Eventually(t, "Run waiting on the clock", e.clock.HasWaiters)
		select {
		case e.m.wake <- struct{}{}:
		default:
		}
		e.clock.Step(time.Second)
	}
}

func nextEviction(t *testing.T, evictions chan string) string {
	t.Helper()
	select {
	case name := <-evictions:
		return name
	case <-time.After(5 * time.Second):
		t.Fatal("no eviction within 5s")
		return ""
	}
}

func noEviction(t *testing.T, evictions chan string, while string) {
	t.Helper()
	select {
	case name := <-evictions:
		t.Fatalf("%s evicted %s", while, name)
	case <-time.After(50 * time.Millisecond):
	}
}

// After an eviction the manager looks again only once the pod is cleaned up, however often
// the kernel signals and the poll interval passes meanwhile.
func TestRunWaitsForTheEvictedPodsCleanup(t *testing.T) {
	e, evictions, cleaned := cleanupEnv(t)
	stepSeconds(t, e, 12)
	noEviction(t, evictions, "waiting for the BestEffort pod's cleanup")
	cleaned.Store(true)
	stepSeconds(t, e, 1)
	if got := nextEviction(t, evictions); got != "guaranteed" {
		t.Fatalf("after the cleanup, with memory still short: evicted %s, want guaranteed", got)
	}
}

// A pod that is never cleaned up holds the manager for podCleanupTimeout only.
func TestRunLooksAgainAfterTheCleanupTimeout(t *testing.T) {
	e, evictions, _ := cleanupEnv(t)
	stepSeconds(t, e, int(podCleanupTimeout/time.Second)-1)
	noEviction(t, evictions, "before the cleanup timeout")
	stepSeconds(t, e, 1)
	if got := nextEviction(t, evictions); got != "guaranteed" {
		t.Fatalf("after the cleanup timeout: evicted %s, want guaranteed", got)
	}
}
