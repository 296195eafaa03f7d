package node

import (
	"context"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A volume about to be set up is posted in volumesInUse at once, without a tick of the fake
// clock, and Node() then shows it: the volume manager mounts it only after that.
func TestVolumesInUsePostedOnChange(t *testing.T) {
	e := newEnv(t, testOptions())
	var mu sync.Mutex
	var inUse []v1.UniqueVolumeName
	changed := make(chan struct{}, 1)
	e.ctrl.deps.VolumesInUse = func() []v1.UniqueVolumeName { mu.Lock(); defer mu.Unlock(); return slices.Clone(inUse) }
	e.ctrl.deps.VolumesInUseChanged = changed
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.ctrl.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	testutil.Eventually(t, "registration", func() bool { return e.ctrl.Registered() })

	want := []v1.UniqueVolumeName{"kubernetes.io/csi/d^v1"}
	mu.Lock()
	inUse = want
	mu.Unlock()
	changed <- struct{}{}
	testutil.Eventually(t, "the volume in the posted status", func() bool { return slices.Equal(e.node(t).Status.VolumesInUse, want) })
	testutil.Eventually(t, "the volume in Node()", func() bool { return slices.Equal(e.ctrl.Node().Status.VolumesInUse, want) })
}
