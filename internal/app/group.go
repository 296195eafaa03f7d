package app

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"
)

// components are nodelet's long-running parts. build collects them with start while it makes
// the object graph; Run then runs them all in one errgroup: the first to fail stops the
// others, and Run returns once every one is back.
type components struct {
	parts []component
	// stop ends the context newComponents returned, with the failure that stops nodelet, if
	// any, as its cause.
	stop context.CancelCauseFunc
	// closers release what the components share (connections, the event broadcaster) once
	// every component returned; run in reverse order.
	closers []func()
}

type component struct {
	name string
	run  func(context.Context) error
}

// newComponents returns an empty group and the context nodelet runs under: it ends when
// parent does, when a component fails or when Run's main returns. Build with it and Run under
// it, so what the build hands out (e.g. requests made on a pod's behalf) ends with nodelet.
func newComponents(parent context.Context) (*components, context.Context) {
	ctx, stop := context.WithCancelCause(parent)
	return &components{stop: stop}, ctx
}

// start adds a component that can fail; Run starts it. A failure ends nodelet with the
// component's name in the error; returning nil (or the context's error on shutdown) ends
// only that component.
func (c *components) start(name string, run func(context.Context) error) {
	c.parts = append(c.parts, component{name: name, run: run})
}

// onStop has Run (or release) call release after every component returned.
func (c *components) onStop(release func()) {
	c.closers = append(c.closers, release)
}

// Run starts every component under ctx (newComponents') and runs main until it returns or a
// component fails; then it stops the rest, waits for every one, releases what they shared and
// gives main's error, else the first failure.
func (c *components) Run(ctx context.Context, main func(context.Context) error) error {
	var g errgroup.Group
	for _, p := range c.parts {
		g.Go(func() error {
			err := p.run(ctx)
			if err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Component failed; stopping nodelet", "component", p.name)
				err = fmt.Errorf("%s: %w", p.name, err)
				c.stop(err)
				return err
			}
			return nil
		})
	}
	c.parts = nil
	err := main(ctx)
	c.stop(nil)
	if werr := g.Wait(); err == nil {
		err = werr
	}
	c.release()
	return err
}

// release stops nodelet and releases what the components share, for a build that failed
// before Run (Run releases itself).
func (c *components) release() {
	c.stop(nil)
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
}
