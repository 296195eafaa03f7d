package app

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"
)

// components runs nodelet's long-running parts in one errgroup: the first to fail stops the
// others (its context is cancelled) and Run returns that error once every goroutine is back.
type components struct {
	g      *errgroup.Group
	ctx    context.Context
	cancel context.CancelFunc
	// closers release what the components share (connections, the event broadcaster) once
	// every component returned; run in reverse order.
	closers []func()
}

func newComponents(ctx context.Context) *components {
	ctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(ctx)
	return &components{g: g, ctx: gctx, cancel: cancel}
}

// start runs a component that can fail. A failure ends nodelet with the component's name in
// the error; returning nil (or the context's error on shutdown) ends only that component.
func (c *components) start(name string, run func(context.Context) error) {
	c.g.Go(func() error {
		err := run(c.ctx)
		if err != nil && c.ctx.Err() == nil {
			klog.ErrorS(err, "Component failed; stopping nodelet", "component", name)
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
}

// loop runs a component whose Run only returns when its context ends.
func (c *components) loop(name string, run func(context.Context)) {
	c.start(name, func(ctx context.Context) error { run(ctx); return nil })
}

// onStop has wait run release after every component returned.
func (c *components) onStop(release func()) {
	c.closers = append(c.closers, release)
}

// wait blocks until every component returned, releases what they shared and gives the first
// failure.
func (c *components) wait() error {
	err := c.g.Wait()
	c.cancel()
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
	return err
}
