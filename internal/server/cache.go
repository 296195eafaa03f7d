package server

import (
	"sync"
	"time"
)

// maxCacheEntries bounds each answer cache; when it is full, expired entries are dropped and,
// if that is not enough, the whole cache is cleared (answers are cheap to ask again).
const maxCacheEntries = 10000

// ttlCache remembers webhook answers for a while, each with its own lifetime.
type ttlCache[V any] struct {
	mu      sync.Mutex
	now     func() time.Time
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](now func() time.Time) *ttlCache[V] {
	return &ttlCache[V]{now: now, entries: map[string]ttlEntry[V]{}}
}

// get returns the value for key while it has not expired.
func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// set stores value for ttl; a ttl of zero or less stores nothing.
func (c *ttlCache[V]) set(key string, value V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= maxCacheEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCacheEntries {
			clear(c.entries)
		}
	}
	c.entries[key] = ttlEntry[V]{value: value, expires: now.Add(ttl)}
}
