package node

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// View is the Node as last seen in or posted to the API, and the way to ask for a status
// update now. It is made before the Controller (Deps.View), which publishes into it and serves
// its requests, so the parts nodelet builds before the controller — the volume manager,
// admission, resizes, node shutdown, the CSI registrar — read the node at construction rather
// than wait for the controller: its own inputs include what they run.
type View struct {
	mu         sync.RWMutex
	node       *v1.Node
	registered bool

	wake    chan struct{}      // a status update soon
	updates chan chan struct{} // a status update now, closing the channel once made
}

// NewView returns a view of a Node not registered yet.
func NewView() *View {
	return &View{wake: make(chan struct{}, 1), updates: make(chan chan struct{})}
}

// Node returns a copy of the Node, or nil before registration.
func (v *View) Node() *v1.Node {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.node == nil {
		return nil
	}
	return v.node.DeepCopy()
}

// Allocatable is the registered Node's allocatable; nil before registration.
func (v *View) Allocatable() v1.ResourceList {
	if n := v.Node(); n != nil {
		return n.Status.Allocatable
	}
	return nil
}

// Registered says whether the Node exists in the API server.
func (v *View) Registered() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.registered
}

// ObserveNode takes a Node another component just wrote (the CSI registrar's labels), so
// checks that read Node see the change before the next status update.
func (v *View) ObserveNode(n *v1.Node) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.registered {
		v.node = n.DeepCopy()
	}
}

func (v *View) set(n *v1.Node) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.node, v.registered = n.DeepCopy(), true
}

// RequestUpdate asks the controller for a status update soon, without waiting (node shutdown:
// the Ready condition at once, not at the next period).
func (v *View) RequestUpdate() {
	select {
	case v.wake <- struct{}{}:
	default: // one is pending already
	}
}

// UpdateNow has the controller post the status and waits until it did or ctx ends; bound
// ctx, as a controller not running (or still registering) serves no request.
func (v *View) UpdateNow(ctx context.Context) {
	done := make(chan struct{})
	select {
	case v.updates <- done:
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}
