package podworkers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// States is which pods have a worker and what state each is in. It is made before the
// workers (New takes it) and answers from then on, empty until they run: the parts nodelet
// builds before the workers read it at construction (the volume manager, which tears down a
// pod's volumes once its worker terminated it; the resizer and the device manager, through the
// active pods), while the workers are made over the pod sync, which runs over those parts.
type States struct {
	mu      sync.Mutex
	workers map[types.UID]*worker
	// finished remembers when recently removed pods were done, so a runtime listing taken
	// before that moment is not mistaken for a pod left behind.
	finished map[types.UID]time.Time
}

// NewStates returns States with no pod.
func NewStates() *States {
	return &States{workers: map[types.UID]*worker{}, finished: map[types.UID]time.Time{}}
}

// State returns a pod's lifecycle state and whether a worker exists for it.
func (p *States) State(uid types.UID) (State, bool) {
	p.mu.Lock()
	w, ok := p.workers[uid]
	p.mu.Unlock()
	if !ok {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state, true
}

// CleanedUp reports whether a pod holds nothing of the node any more: its worker has
// terminated it and torn down its volumes (a kept pod), or has removed it.
func (p *States) CleanedUp(uid types.UID) bool {
	p.mu.Lock()
	w, ok := p.workers[uid]
	p.mu.Unlock()
	if !ok {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == Terminated && w.cleanedUp
}

// Known returns the UIDs that currently have a worker.
func (p *States) Known() map[types.UID]State {
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.workers))
	for _, w := range p.workers {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	out := make(map[types.UID]State, len(ws))
	for _, w := range ws {
		w.mu.Lock()
		out[w.uid] = w.state
		w.mu.Unlock()
	}
	return out
}

// FinishedAt returns when a pod's worker removed it, if that was within the last minute.
func (p *States) FinishedAt(uid types.UID) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.finished[uid]
	return at, ok
}
