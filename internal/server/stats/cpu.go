package stats

import (
	"sync"
	"time"
)

// cpuRates turns cumulative CPU counters into usageNanoCores. It keeps the last sample per key
// (a container ID, or "node") and reports the rate between that sample and the next one taken
// at least minWindow later, so that callers polling close together (metrics-server, a
// Prometheus scrape, the eviction loop) still get rates over a meaningful window.
type cpuRates struct {
	minWindow time.Duration

	mu      sync.Mutex
	entries map[string]*cpuEntry
}

type cpuEntry struct {
	at       time.Time // when the kept sample was taken
	usage    uint64    // cumulative nanoseconds of CPU at that time
	rate     *uint64   // the last computed rate, nil until two samples were seen
	lastSeen time.Time // for pruning entries of containers that went away
}

func newCPURates(minWindow time.Duration) *cpuRates {
	return &cpuRates{minWindow: minWindow, entries: map[string]*cpuEntry{}}
}

// nanoCores records a sample of key's cumulative usage taken at "at" and returns the usage
// rate in nanocores, or nil while there is no earlier sample to compare with.
func (r *cpuRates) nanoCores(key string, at time.Time, usage uint64) *uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	switch {
	case !ok:
		r.entries[key] = &cpuEntry{at: at, usage: usage, lastSeen: at}
		return nil
	case !at.After(e.at):
		// The same or an older sample (concurrent callers): nothing new to compute.
		return copyPtr(e.rate)
	case usage < e.usage:
		// The counter went backwards (reset): start over.
		r.entries[key] = &cpuEntry{at: at, usage: usage, lastSeen: at}
		return nil
	}
	e.lastSeen = at
	window := at.Sub(e.at)
	if window < r.minWindow {
		return copyPtr(e.rate)
	}
	rate := uint64(float64(usage-e.usage) / window.Seconds())
	e.at, e.usage, e.rate = at, usage, &rate
	return copyPtr(e.rate)
}

// prune forgets keys not sampled since cutoff.
func (r *cpuRates) prune(cutoff time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.entries {
		if e.lastSeen.Before(cutoff) {
			delete(r.entries, k)
		}
	}
}

func copyPtr(p *uint64) *uint64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
