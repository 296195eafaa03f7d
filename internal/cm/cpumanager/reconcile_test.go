package cpumanager

import (
	"context"
	"errors"
	"testing"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

func TestReconcileShrinksTheSharedPool(t *testing.T) {
	m, fake, _ := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	be := pod("be", "", "app")
	fake.run(be)
	m.Reconcile(context.Background())
	if got := fake.updates["be-app"]; got != "0-1" {
		t.Fatalf("BestEffort container set to %q, want the whole pool 0-1", got)
	}
	g := pod("g", "1", "app")
	if err := allocate(t, m, g); err != nil {
		t.Fatal(err)
	}
	fake.run(g)
	m.Reconcile(context.Background())
	if got := fake.updates["be-app"]; got != "0" {
		t.Errorf("BestEffort container set to %q once CPU 1 is exclusive, want 0", got)
	}
	if got := fake.updates["g-app"]; got != "1" {
		t.Errorf("Guaranteed container set to %q, want 1", got)
	}
	calls := fake.calls
	m.Reconcile(context.Background())
	if fake.calls != calls {
		t.Errorf("a pass with nothing changed made %d runtime calls", fake.calls-calls)
	}
}

func TestReconcileRetriesAFailedUpdate(t *testing.T) {
	m, fake, _ := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	fake.run(pod("be", "", "app"))
	fake.fail = errors.New("runtime down")
	m.Reconcile(context.Background())
	fake.fail = nil
	m.Reconcile(context.Background())
	if got := fake.updates["be-app"]; got != "0-1" {
		t.Errorf("after a failed update the next pass set %q, want 0-1", got)
	}
}

func TestReconcileReleasesGonePodsOnTheSecondPass(t *testing.T) {
	m, fake, _ := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	g := pod("g", "1", "app")
	if err := allocate(t, m, g); err != nil {
		t.Fatal(err)
	}
	// Not (yet) among the active pods: at a restart the sync loop may not have taken it in.
	m.Reconcile(context.Background())
	if m.ContainerCPUs(g.UID, "app").IsEmpty() {
		t.Fatal("released at the first pass that missed the pod")
	}
	fake.run(g)
	m.Reconcile(context.Background())
	fake.remove(g.UID)
	m.Reconcile(context.Background())
	if m.ContainerCPUs(g.UID, "app").IsEmpty() {
		t.Fatal("a pod seen in between was released at its first miss")
	}
	m.Reconcile(context.Background())
	if !m.ContainerCPUs(g.UID, "app").IsEmpty() || m.SharedCPUs().String() != "0-1" {
		t.Errorf("gone pod still holds %s; shared %s", m.ContainerCPUs(g.UID, "app"), m.SharedCPUs())
	}
}

func TestReconcileWaitsForTheSources(t *testing.T) {
	fake := newNode()
	opts := managerOptions(t.TempDir(), twoCPUs, cmpolicy.CPUStatic, 1, nil, fake)
	ready := false
	opts.SourcesReady = func() bool { return ready }
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	g := pod("g", "1", "app")
	if err := m.Allocate(g, &g.Spec.Containers[0], topology.Hint{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		m.Reconcile(context.Background())
	}
	if m.ContainerCPUs(g.UID, "app").IsEmpty() {
		t.Error("released before every pod source was seen")
	}
}
