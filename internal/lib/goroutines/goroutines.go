// Package goroutines runs the goroutines a component starts on behalf of callers outside its Run
// (a new pod's worker, a new object watch) under Run's context, and joins them when Run returns.
// It is how such components keep the one rule: everything long-running ends with its Run.
package goroutines

import (
	"context"
	"sync"
)

// Goroutines starts the functions given to Go under the context of its Run. Create it with New.
type Goroutines struct {
	mu      sync.Mutex
	pending []func(context.Context)
	added   chan struct{} // wakes Run when pending grew
}

// New returns Goroutines with nothing to start.
func New() *Goroutines {
	return &Goroutines{added: make(chan struct{}, 1)}
}

// Go has Run start f with its context, at once if Run is running. f must return once that
// context ends. A function given after Run returned never starts.
func (g *Goroutines) Go(f func(context.Context)) {
	g.mu.Lock()
	g.pending = append(g.pending, f)
	g.mu.Unlock()
	select {
	case g.added <- struct{}{}:
	default:
	}
}

// GoStoppable is Go for a function that can also be stopped on its own: it runs on a context
// under Run's, whose cancel claim gets first; claim says whether f is still wanted (false: it
// was dropped before it started).
func (g *Goroutines) GoStoppable(claim func(stop context.CancelFunc) bool, f func(context.Context)) {
	g.Go(func(ctx context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if claim(cancel) {
			f(ctx)
		}
	})
}

// Run starts every function given to Go, before or while it runs, until ctx ends; then it
// waits for all of them to return.
func (g *Goroutines) Run(ctx context.Context) error {
	var running sync.WaitGroup
	defer running.Wait()
	for {
		g.mu.Lock()
		pending := g.pending
		g.pending = nil
		g.mu.Unlock()
		for _, f := range pending {
			running.Go(func() { f(ctx) })
		}
		select {
		case <-ctx.Done():
			return nil
		case <-g.added:
		}
	}
}
