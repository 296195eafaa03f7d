package node

import (
	"context"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

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

// A Node read from the API server's cache can predate the last status update. A volume list
// that changed is diffed against a fresh read, so the update carries the new name even when
// the cache still shows it from an older update; the volume manager hears of the list only
// once the API server holds it.
func TestVolumesInUseChangeIsPatchedAgainstAFreshNode(t *testing.T) {
	e := newEnv(t, testOptions())
	vol := v1.UniqueVolumeName("kubernetes.io/csi/d^v1")
	var mu sync.Mutex
	var inUse, reported []v1.UniqueVolumeName
	e.ctrl.deps.VolumesInUse = func() []v1.UniqueVolumeName { mu.Lock(); defer mu.Unlock(); return slices.Clone(inUse) }
	e.ctrl.deps.VolumesReportedInUse = func(names []v1.UniqueVolumeName) { mu.Lock(); defer mu.Unlock(); reported = names }
	ctx := context.Background()
	if !e.ctrl.registerUntilDone(ctx) {
		t.Fatal("not registered")
	}
	e.ctrl.updateStatus(ctx)

	// The cache answers with a Node that still lists the volume (an older update's).
	stale := e.node(t).DeepCopy()
	stale.Status.VolumesInUse = []v1.UniqueVolumeName{vol}
	cachedReads := 0
	e.client.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).(k8stesting.GetActionImpl).GetOptions.ResourceVersion == "0" {
			cachedReads++
			return true, stale.DeepCopy(), nil
		}
		return false, nil, nil
	})
	mu.Lock()
	inUse = []v1.UniqueVolumeName{vol}
	mu.Unlock()
	e.ctrl.updateStatus(ctx)
	if got := e.node(t).Status.VolumesInUse; !slices.Equal(got, inUse) {
		t.Fatalf("API server's volumesInUse = %v, want %v (cached reads: %d)", got, inUse, cachedReads)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(reported, inUse) {
		t.Errorf("volume manager told %v, want %v", reported, inUse)
	}
}
