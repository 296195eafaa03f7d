package server

import (
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
)

// Bounds of the answer caches. Refusals are kept apart from acceptances and in fewer entries:
// anyone who reaches the port can make up refused tokens by the million, and they must evict
// only each other, never the identities (or allowed decisions) the node already knows.
const (
	maxAcceptedEntries = 10000
	maxRefusedEntries  = 1024
)

// answerCache remembers webhook answers for a while, each with its own lifetime, in two least-
// recently-used caches with expiry: one for accepted answers (with their value), one for
// refused ones.
type answerCache[V any] struct {
	accepted *utilcache.LRUExpireCache
	refused  *utilcache.LRUExpireCache
}

// clockFunc lets tests drive the caches' expiry.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

func newAnswerCache[V any](now func() time.Time) *answerCache[V] {
	return &answerCache[V]{
		accepted: utilcache.NewLRUExpireCacheWithClock(maxAcceptedEntries, clockFunc(now)),
		refused:  utilcache.NewLRUExpireCacheWithClock(maxRefusedEntries, clockFunc(now)),
	}
}

// get returns the answer for key while it has not expired: the accepted value, or refused.
func (c *answerCache[V]) get(key string) (value V, refused, found bool) {
	if v, ok := c.accepted.Get(key); ok {
		return v.(V), false, true
	}
	if _, ok := c.refused.Get(key); ok {
		return value, true, true
	}
	return value, false, false
}

// accept stores an accepted answer for ttl; a ttl of zero or less stores nothing.
func (c *answerCache[V]) accept(key string, value V, ttl time.Duration) {
	if ttl > 0 {
		c.refused.Remove(key)
		c.accepted.Add(key, value, ttl)
	}
}

// refuse stores a refusal for ttl; a ttl of zero or less stores nothing.
func (c *answerCache[V]) refuse(key string, ttl time.Duration) {
	if ttl > 0 {
		c.accepted.Remove(key)
		c.refused.Add(key, struct{}{}, ttl)
	}
}

// len is how many answers are held, expired ones included until they are evicted.
func (c *answerCache[V]) len() int { return len(c.accepted.Keys()) + len(c.refused.Keys()) }
