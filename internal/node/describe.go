package node

import (
	"context"
	"errors"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Describer works out the status a standalone node would post if it had an API server —
// capacity, allocatable, addresses, node info, the pressure and Ready conditions — so the node
// page shows the same figures in either mode. It never talks to an API server.
type Describer struct {
	mu   sync.Mutex
	c    *Controller
	node *v1.Node // the last description: condition transition times carry over from it
}

// NewDescriber returns a Describer for base (node.Local's object). Only Runtime, Health,
// Pressure, Machine, Paths and Clock of deps are used.
func NewDescriber(base *v1.Node, opts Options, deps Deps) (*Describer, error) {
	opts, deps = opts.withDefaults(), deps.withDefaults()
	if opts.NodeName == "" {
		return nil, errors.New("node: NodeName is required")
	}
	deps.Images, deps.Devices = nil, nil
	c, err := newController(opts, deps)
	if err != nil {
		return nil, err
	}
	return &Describer{c: c, node: base.DeepCopy()}, nil
}

// Describe returns the node with its status as of now.
func (d *Describer) Describe(ctx context.Context) *v1.Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.c.setStatus(ctx, d.node, d.c.deps.Clock.Now())
	return d.node.DeepCopy()
}
