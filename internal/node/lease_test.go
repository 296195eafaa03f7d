package node

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
	"github.com/nodelet/nodelet/internal/testutil"
)

type leaseEnv struct {
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	lc     *LeaseController
}

func newLeaseEnv(t *testing.T, objects ...runtime.Object) *leaseEnv {
	t.Helper()
	e := &leaseEnv{client: fake.NewClientset(objects...), clock: clocktesting.NewFakeClock(testStart)}
	lc, err := NewLeaseController(Options{NodeName: testNode}, Deps{Heartbeat: kubeclienttest.FromClientset(e.client), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	e.lc = lc
	return e
}

func (e *leaseEnv) lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l, err := e.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (e *leaseEnv) count(verb, resource string) int {
	n := 0
	for _, a := range e.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func existingNode() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}}
}

func TestLeaseCreatedThenRenewed(t *testing.T) {
	e := newLeaseEnv(t, existingNode())
	ctx := context.Background()
	e.lc.sync(ctx)
	l := e.lease(t)
	if *l.Spec.HolderIdentity != testNode || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(testStart) {
		t.Errorf("lease spec = holder %q duration %d renew %v", *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds, l.Spec.RenewTime)
	}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: testNode, UID: "node-uid"}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0] != want {
		t.Errorf("owner references = %v, want %v", l.OwnerReferences, want)
	}

	e.clock.Step(10 * time.Second)
	e.lc.sync(ctx)
	if got := e.lease(t).Spec.RenewTime.Time; !got.Equal(testStart.Add(10 * time.Second)) {
		t.Errorf("renew time = %v after renewing, want %v", got, testStart.Add(10*time.Second))
	}
	if c, u := e.count("create", "leases"), e.count("update", "leases"); c != 1 || u != 1 {
		t.Errorf("%d creates and %d updates, want 1 and 1", c, u)
	}
}

func TestLeaseGetsOwnerOnceNodeExists(t *testing.T) {
	e := newLeaseEnv(t)
	ctx := context.Background()
	e.lc.sync(ctx)
	if refs := e.lease(t).OwnerReferences; len(refs) != 0 {
		t.Fatalf("owner references %v before the node exists", refs)
	}
	if err := e.client.Tracker().Add(existingNode()); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(10 * time.Second)
	e.lc.sync(ctx)
	if refs := e.lease(t).OwnerReferences; len(refs) != 1 || refs[0].UID != "node-uid" {
		t.Errorf("owner references = %v, want the node", refs)
	}
	nodeGets := e.count("get", "nodes")
	e.clock.Step(10 * time.Second)
	e.lc.sync(ctx)
	if e.count("get", "nodes") != nodeGets {
		t.Error("node read again although the lease already has its owner")
	}
}

func TestLeaseConflictRereadsAndRetries(t *testing.T) {
	e := newLeaseEnv(t, existingNode())
	ctx := context.Background()
	e.lc.sync(ctx)
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, testNode, errors.New("stale"))
	failN(e.client, "update", "leases", 1, conflict)
	e.clock.Step(10 * time.Second)

	done := make(chan struct{})
	go func() { e.lc.sync(ctx); close(done) }()
	testutil.Eventually(t, "the back-off wait", e.clock.HasWaiters)
	e.clock.Step(leaseBackoffStart)
	<-done
	if g := e.count("get", "leases"); g != 2 {
		t.Errorf("%d lease reads, want the first plus a re-read after the conflict", g)
	}
	if got := e.lease(t).Spec.RenewTime.Time; !got.Equal(e.clock.Now()) {
		t.Errorf("renew time = %v, want %v", got, e.clock.Now())
	}
}

func TestLeaseBackoffStopsBeforeNextRenewal(t *testing.T) {
	e := newLeaseEnv(t)
	failN(e.client, "get", "leases", 1000, errors.New("apiserver unreachable"))
	done := make(chan struct{})
	go func() { e.lc.sync(context.Background()); close(done) }()
	// 200+400+800+1600+3200 = 6.2s of waits; the next 6.4s would pass the 10s renewal.
	for i, wait := range []time.Duration{200, 400, 800, 1600, 3200} {
		testutil.Eventually(t, "a back-off wait", func() bool { return e.count("get", "leases") == i+1 && e.clock.HasWaiters() })
		e.clock.Step(wait * time.Millisecond)
	}
	<-done
	if n := e.count("get", "leases"); n != 6 {
		t.Errorf("%d attempts, want 6", n)
	}
}

func TestLeaseRunRenewsEveryQuarterDuration(t *testing.T) {
	e := newLeaseEnv(t, existingNode())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.lc.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	testutil.Eventually(t, "the lease", func() bool { return e.count("create", "leases") == 1 && e.clock.HasWaiters() })
	e.clock.Step(10 * time.Second)
	testutil.Eventually(t, "a renewal", func() bool { return e.count("update", "leases") == 1 })
	if got := e.lease(t).Spec.RenewTime.Time; !got.Equal(testStart.Add(10 * time.Second)) {
		t.Errorf("renew time = %v", got)
	}
}
