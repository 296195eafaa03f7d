package prober

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The store is made before the Manager, as app makes it before the runtime that reads it:
// what the workers publish is what a reader holding only the store sees, per instance.
func TestResultsMadeFirstAreWhatTheWorkersPublish(t *testing.T) {
	store := NewResults()
	pod := probePod(v1.Container{Name: "app", StartupProbe: execProbe("started")})
	plain := probePod(v1.Container{Name: "app"})
	if !store.Started(plain, "app", "c1") || !store.Ready(plain, "app", "c1") {
		t.Error("a container without probes is not started and ready")
	}
	if store.Started(pod, "app", "c1") {
		t.Fatal("started before any prober ran")
	}

	f := newFixtureOver(t, store)
	f.m.unit = time.Hour // only a wake-up gets a second probe in
	f.running(pod, "app", "c1", time.Now())
	f.m.AddPod(pod)
	testutil.Eventually(t, "the store to show the startup probe passed", func() bool { return store.Started(pod, "app", "containerd://c1") })

	// A new instance: asking whether it started does not probe it before its period (upstream
	// gives it failureThreshold × period).
	f.running(pod, "app", "c2", time.Now())
	for range 5 {
		if store.Started(pod, "app", "c2") {
			t.Fatal("a new instance counts as started before its startup probe ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := f.exec.count("started"); n != 1 {
		t.Errorf("startup probe ran %d times, want once (the first instance, at the worker's start)", n)
	}
	f.m.RemovePod(pod)
	if store.Started(pod, "app", "c1") {
		t.Error("results kept in the store after RemovePod")
	}
}

// Readiness is asked for at every status: a new instance is probed at once, not a period later.
func TestReadingReadinessOfANewInstanceProbesIt(t *testing.T) {
	store := NewResults()
	pod := probePod(v1.Container{Name: "app", ReadinessProbe: execProbe("ready")})
	f := newFixtureOver(t, store)
	f.m.unit = time.Hour // only a wake-up gets a second probe in
	f.running(pod, "app", "c1", time.Now())
	f.m.AddPod(pod)
	testutil.Eventually(t, "the first instance ready", func() bool { return store.Ready(pod, "app", "c1") })
	f.running(pod, "app", "c2", time.Now())
	testutil.Eventually(t, "a read of the store for a new instance to have it probed without waiting a period",
		func() bool { return store.Ready(pod, "app", "c2") })
}
