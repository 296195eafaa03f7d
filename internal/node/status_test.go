package node

import (
	"context"
	"errors"
	"reflect"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/internal/testutil"
)

// registered returns an env whose node is registered and whose events are drained.
func registered(t *testing.T, opts Options) *env {
	t.Helper()
	e := newEnv(t, opts)
	if err := e.ctrl.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.events()
	return e
}

func TestStatusPostedOnlyOnChangeOrWhenReportIsDue(t *testing.T) {
	e := registered(t, testOptions())
	ctx := context.Background()

	e.clock.Step(10 * time.Second)
	e.ctrl.updateStatus(ctx)
	if n := e.count("patch", "nodes", "status"); n != 0 {
		t.Fatalf("%d status patches with nothing changed", n)
	}

	e.images.mu.Lock()
	e.images.images = []v1.ContainerImage{{Names: []string{"new:1"}, SizeBytes: 1000}}
	e.images.mu.Unlock()
	e.clock.Step(10 * time.Second)
	e.ctrl.updateStatus(ctx)
	if n := e.count("patch", "nodes", "status"); n != 1 {
		t.Fatalf("%d status patches after the image list changed, want 1", n)
	}
	changedAt := e.clock.Now()
	if got := e.node(t).Status.Images; len(got) != 1 || got[0].Names[0] != "new:1" {
		t.Errorf("images = %v, want the new list", got)
	}
	ready := condition(e.node(t), v1.NodeReady)
	if !ready.LastHeartbeatTime.Time.Equal(changedAt) || !ready.LastTransitionTime.Time.Equal(testStart) {
		t.Errorf("Ready heartbeat %v transition %v; want heartbeat now and transition unchanged", ready.LastHeartbeatTime, ready.LastTransitionTime)
	}

	e.clock.Step(DefaultReportFrequency - time.Second)
	e.ctrl.updateStatus(ctx)
	if n := e.count("patch", "nodes", "status"); n != 1 {
		t.Fatalf("%d status patches before the report frequency passed, want 1", n)
	}
	e.clock.Step(time.Second)
	e.ctrl.updateStatus(ctx)
	if n := e.count("patch", "nodes", "status"); n != 2 {
		t.Fatalf("%d status patches once the report was due, want 2", n)
	}
	if got := condition(e.node(t), v1.NodeReady).LastHeartbeatTime.Time; !got.Equal(e.clock.Now()) {
		t.Errorf("heartbeat = %v, want %v", got, e.clock.Now())
	}
	if got := e.reasons(); len(got) != 0 {
		t.Errorf("events without a condition change: %v", got)
	}
}

func TestConditionTransitionsRecordEvents(t *testing.T) {
	var memoryPressure bool
	e := newEnv(t, testOptions())
	e.ctrl.deps.Pressure = func() (bool, bool, bool) { return memoryPressure, false, false }
	ctx := context.Background()
	if err := e.ctrl.register(ctx); err != nil {
		t.Fatal(err)
	}
	e.events()

	e.clock.Step(10 * time.Second)
	e.health.set(errors.New("PLEG is not healthy: pleg was last seen active 3m0s ago"))
	e.ctrl.updateStatus(ctx)
	ready := condition(e.node(t), v1.NodeReady)
	if ready.Status != v1.ConditionFalse || ready.Reason != "KubeletNotReady" || ready.Message != "PLEG is not healthy: pleg was last seen active 3m0s ago" {
		t.Errorf("Ready = %+v", ready)
	}
	if !ready.LastTransitionTime.Time.Equal(e.clock.Now()) {
		t.Errorf("Ready transition time %v, want %v", ready.LastTransitionTime, e.clock.Now())
	}
	if got, want := e.reasons(), []string{"NodeNotReady"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if e.ctrl.Node().Status.Conditions[3].Status != v1.ConditionFalse {
		t.Error("Node() does not show the posted status")
	}

	e.clock.Step(10 * time.Second)
	e.health.set(nil)
	memoryPressure = true
	e.ctrl.updateStatus(ctx)
	if got, want := e.reasons(), []string{"NodeHasInsufficientMemory", "NodeReady"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	mem := condition(e.node(t), v1.NodeMemoryPressure)
	if mem.Status != v1.ConditionTrue || mem.Reason != "KubeletHasInsufficientMemory" {
		t.Errorf("MemoryPressure = %+v", mem)
	}
}

func TestStatusPatchRetriesThenWaitsForNextTick(t *testing.T) {
	e := registered(t, testOptions())
	failures := 0
	e.ctrl.deps.OnRepeatedHeartbeatFailure = func() { failures++ }
	ctx := context.Background()
	e.health.set(errors.New("runtime down"))

	failN(e.client, "patch", "nodes", 2, errors.New("connection reset"))
	e.ctrl.updateStatus(ctx)
	if n := e.count("patch", "nodes", "status"); n != 3 {
		t.Errorf("%d patch attempts, want 2 failures then a success", n)
	}
	if condition(e.node(t), v1.NodeReady).Status != v1.ConditionFalse {
		t.Error("status not posted after the retries")
	}

	e.health.set(nil)
	failN(e.client, "patch", "nodes", 100, errors.New("connection reset"))
	failures = 0
	e.ctrl.updateStatus(ctx)
	if n := e.count("patch", "nodes", "status"); n != 3+statusRetries {
		t.Errorf("%d patch attempts, want %d more", n, statusRetries)
	}
	if failures != statusRetries-1 {
		t.Errorf("repeated-failure hook ran %d times, want %d", failures, statusRetries-1)
	}
}

func TestDualStackAddressesReplaceOldOnes(t *testing.T) {
	e := registered(t, testOptions())
	e.ctrl.opts.NodeIPs = []string{"192.0.2.20", "2001:db8::20"}
	e.ctrl.updateStatus(context.Background())
	want := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "192.0.2.20"},
		{Type: v1.NodeInternalIP, Address: "2001:db8::20"},
		{Type: v1.NodeHostName, Address: testNode},
	}
	if got := e.node(t).Status.Addresses; !reflect.DeepEqual(got, want) {
		t.Errorf("addresses = %v, want %v", got, want)
	}
}

func TestStatusKeepsOtherComponentsConditions(t *testing.T) {
	e := registered(t, testOptions())
	n := e.node(t)
	n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{
		Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated",
		LastTransitionTime: metav1.NewTime(testStart),
	})
	if err := e.client.Tracker().Update(v1.SchemeGroupVersion.WithResource("nodes"), n, ""); err != nil {
		t.Fatal(err)
	}
	e.health.set(errors.New("runtime down"))
	e.ctrl.updateStatus(context.Background())
	got := e.node(t)
	if c := condition(got, v1.NodeNetworkUnavailable); c.Reason != "RouteCreated" {
		t.Errorf("NetworkUnavailable lost: %v", got.Status.Conditions)
	}
	if c := condition(got, v1.NodeReady); c.Status != v1.ConditionFalse {
		t.Errorf("Ready = %v, want False", c.Status)
	}
}

func TestStatusKeepsLastGoodValuesWhenSourcesFail(t *testing.T) {
	e := registered(t, testOptions())
	e.runtime.err = errors.New("runtime down")
	e.ctrl.deps.Paths.Statfs = func(string, *syscall.Statfs_t) error { return errors.New("gone") }
	e.clock.Step(DefaultReportFrequency)
	e.ctrl.updateStatus(context.Background())
	n := e.node(t)
	if n.Status.NodeInfo.ContainerRuntimeVersion != "containerd://1.6.20~ds1" {
		t.Errorf("runtime version = %q, want the last known", n.Status.NodeInfo.ContainerRuntimeVersion)
	}
	if q := n.Status.Capacity[v1.ResourceEphemeralStorage]; q.String() != "100Gi" {
		t.Errorf("ephemeral-storage = %s, want the last measured 100Gi", q.String())
	}
}

func TestRunPostsStatusOnEachTick(t *testing.T) {
	e := newEnv(t, testOptions())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.ctrl.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// After registering, Run checks the status once (unchanged: no patch) and starts its ticker.
	testutil.Eventually(t, "the first status check", func() bool {
		return e.count("get", "nodes", "") == 1 && e.clock.HasWaiters()
	})
	e.health.set(errors.New("sync loop stalled"))
	e.clock.Step(10 * time.Second)
	testutil.Eventually(t, "a status patch", func() bool { return e.count("patch", "nodes", "status") == 1 })
	if got := condition(e.node(t), v1.NodeReady); got.Status != v1.ConditionFalse {
		t.Errorf("Ready = %v after the tick, want False", got.Status)
	}
	want := []string{"Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"}
	testutil.Eventually(t, "NodeNotReady", func() bool { return len(e.recorder.Events) == len(want)+1 })
	if got := e.reasons(); !reflect.DeepEqual(got, append(want, "NodeNotReady")) {
		t.Errorf("events = %v", got)
	}
}

func TestStatusStopsRetryingWhenTheNodeIsGone(t *testing.T) {
	e := registered(t, testOptions())
	if err := e.client.Tracker().Delete(v1.SchemeGroupVersion.WithResource("nodes"), "", testNode); err != nil {
		t.Fatal(err)
	}
	e.ctrl.updateStatus(context.Background())
	var reads []string
	for _, a := range e.client.Actions() {
		if get, ok := a.(k8stesting.GetAction); ok && a.GetResource().Resource == "nodes" {
			reads = append(reads, get.GetName())
		}
	}
	if len(reads) != 2 || e.count("patch", "nodes", "status") != 0 {
		t.Errorf("%d node reads and %d patches for a deleted node; want a cached and a fresh read, no patch",
			len(reads), e.count("patch", "nodes", "status"))
	}
}
