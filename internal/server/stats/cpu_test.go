package stats

import (
	"testing"
	"time"
)

func TestNanoCoresFromTwoSamples(t *testing.T) {
	r := newCPURates(time.Second)
	t0 := time.Unix(100, 0)
	if got := r.nanoCores("c1", t0, 1e9); got != nil {
		t.Fatalf("first sample gave %d, want nil", *got)
	}
	// 0.5 CPU-seconds over 2 seconds: a quarter of a core.
	got := r.nanoCores("c1", t0.Add(2*time.Second), 1.5e9)
	if got == nil || *got != 250_000_000 {
		t.Fatalf("nanoCores = %v, want 250000000", got)
	}
	// A sample within the minimum window keeps the last rate and the kept sample.
	if got := r.nanoCores("c1", t0.Add(2500*time.Millisecond), 1.9e9); got == nil || *got != 250_000_000 {
		t.Fatalf("within the window: %v, want the previous rate", got)
	}
	// The next rate is over the whole window since the kept sample (2s → 4s: 1 core).
	if got := r.nanoCores("c1", t0.Add(4*time.Second), 3.5e9); got == nil || *got != 1_000_000_000 {
		t.Fatalf("nanoCores = %v, want one core", got)
	}
	// An older sample (a concurrent caller) changes nothing.
	if got := r.nanoCores("c1", t0.Add(3*time.Second), 2e9); got == nil || *got != 1_000_000_000 {
		t.Fatalf("stale sample: %v", got)
	}
	// Keys are independent.
	if got := r.nanoCores("c2", t0.Add(4*time.Second), 1); got != nil {
		t.Fatalf("new key: %v", *got)
	}
}

func TestNanoCoresResetWhenCounterGoesBack(t *testing.T) {
	r := newCPURates(time.Second)
	t0 := time.Unix(100, 0)
	r.nanoCores("c", t0, 5e9)
	r.nanoCores("c", t0.Add(time.Second), 6e9)
	if got := r.nanoCores("c", t0.Add(2*time.Second), 1e9); got != nil {
		t.Fatalf("after a reset: %d, want nil", *got)
	}
	if got := r.nanoCores("c", t0.Add(3*time.Second), 2e9); got == nil || *got != 1e9 {
		t.Fatalf("after a reset and a sample: %v", got)
	}
}

func TestCPURatesPrune(t *testing.T) {
	r := newCPURates(time.Second)
	t0 := time.Unix(100, 0)
	r.nanoCores("old", t0, 1)
	r.nanoCores("new", t0.Add(time.Hour), 1)
	r.prune(t0.Add(time.Minute))
	if _, ok := r.entries["old"]; ok {
		t.Error("old entry kept")
	}
	if _, ok := r.entries["new"]; !ok {
		t.Error("new entry dropped")
	}
}
