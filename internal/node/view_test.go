package node

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// The view is made before the controller, as app makes it before the parts the controller
// reads: they read the node and ask for updates through it from then on.
func TestViewMadeBeforeTheController(t *testing.T) {
	view := NewView()
	view.ObserveNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}})
	if view.Node() != nil || view.Registered() || view.Allocatable() != nil {
		t.Fatal("a node seen before registration")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	view.UpdateNow(ctx) // no controller serves it: returns with ctx
	cancel()
	view.RequestUpdate()

	e := newEnvView(t, testOptions(), view)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.ctrl.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	testutil.Eventually(t, "the registered node in the view", func() bool { return view.Registered() })
	if q := view.Allocatable()[v1.ResourceCPU]; q.IsZero() {
		t.Errorf("allocatable %v, want the registered node's", view.Allocatable())
	}
	testutil.Eventually(t, "the status loop waiting on its ticker", func() bool { return e.clock.HasWaiters() })

	// No tick: only the view's requests post the status.
	e.health.set(errors.New("node shutting down"))
	view.UpdateNow(context.Background())
	if got := condition(e.node(t), v1.NodeReady); got.Status != v1.ConditionFalse {
		t.Errorf("Ready = %v once UpdateNow returned, want False", got.Status)
	}
	if got := condition(view.Node(), v1.NodeReady); got.Status != v1.ConditionFalse {
		t.Errorf("the view's Ready = %v, want the posted False", got.Status)
	}
	e.health.set(nil)
	view.RequestUpdate()
	testutil.Eventually(t, "Ready again after RequestUpdate", func() bool {
		return condition(e.node(t), v1.NodeReady).Status == v1.ConditionTrue
	})

	labelled := view.Node()
	labelled.Labels["csi"] = "yes"
	view.ObserveNode(labelled)
	if view.Node().Labels["csi"] != "yes" {
		t.Error("a node another component wrote is not seen")
	}
}
