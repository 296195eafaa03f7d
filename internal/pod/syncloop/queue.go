package syncloop

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Queue holds when each pod next wants a sync. The sync tick takes the pods that are due.
type Queue struct {
	mu  sync.Mutex
	due map[types.UID]time.Time
	now func() time.Time
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	return &Queue{due: map[types.UID]time.Time{}, now: time.Now}
}

// Enqueue asks for a sync of uid after the delay; an earlier request already queued wins.
func (q *Queue) Enqueue(uid types.UID, after time.Duration) {
	at := q.now().Add(after)
	q.mu.Lock()
	if cur, ok := q.due[uid]; !ok || at.Before(cur) {
		q.due[uid] = at
	}
	q.mu.Unlock()
}

// Due removes and returns every pod whose time has come.
func (q *Queue) Due() []types.UID {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []types.UID
	for uid, at := range q.due {
		if !at.After(now) {
			out = append(out, uid)
			delete(q.due, uid)
		}
	}
	return out
}

// Len returns how many pods are queued.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.due)
}
