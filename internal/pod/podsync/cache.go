package podsync

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Cache keeps the latest runtime status read for each pod, for the HTTP API and run-once mode.
type Cache struct {
	mu   sync.RWMutex
	pods map[types.UID]*container.PodStatus
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{pods: map[types.UID]*container.PodStatus{}} }

// Set stores a status read.
func (c *Cache) Set(s *container.PodStatus) {
	c.mu.Lock()
	c.pods[s.UID] = s
	c.mu.Unlock()
}

// Get returns the last status read for uid.
func (c *Cache) Get(uid types.UID) (*container.PodStatus, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.pods[uid]
	return s, ok
}

// Delete forgets uid.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	delete(c.pods, uid)
	c.mu.Unlock()
}
