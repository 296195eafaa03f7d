package cpumanager

import (
	"testing"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/cm/topologymanager"
	"github.com/nodelet/nodelet/internal/host/topology"
)

// The CPU manager as the topology manager's hint provider, on two NUMA nodes of two cores each
// with CPU 0 reserved: single-numa-node places a 2-CPU container on node 1 (node 0 has one CPU
// left), refuses one needing 3 CPUs with TopologyAffinityError and gives nothing away, and a
// pod refused for its second container (no CPU left) gets back what its first container got,
// under single-numa-node (no hint) and under none (the CPU manager's own error).
func TestCPUManagerUnderTheTopologyManager(t *testing.T) {
	machine := topology.Synthetic(1, 2, 2, 1, 1<<30)
	m, _, _ := newManager(t, machine, cmpolicy.CPUStatic, 1, nil)
	tm, err := topologymanager.New(machine, topologymanager.Config{Policy: topologymanager.PolicySingleNUMANode, Scope: topologymanager.ScopeContainer}, m)
	if err != nil {
		t.Fatal(err)
	}

	two := pod("two", "2", "app")
	if ok, reason, msg := tm.Admit(two); !ok {
		t.Fatalf("2 CPUs refused: %s %s", reason, msg)
	}
	if got := m.ContainerCPUs(two.UID, "app").String(); got != "2-3" {
		t.Errorf("2 CPUs on %q, want node 1's 2-3", got)
	}
	three := pod("three", "3", "app")
	if ok, reason, _ := tm.Admit(pod("three", "3", "app")); ok || reason != topologymanager.ReasonTopologyAffinity {
		t.Errorf("3 CPUs on one node: ok %v reason %q, want TopologyAffinityError", ok, reason)
	}
	if !m.ContainerCPUs(three.UID, "app").IsEmpty() || m.SharedCPUs().String() != "0-1" {
		t.Errorf("after a refusal: shared %s", m.SharedCPUs())
	}

	both := pod("both", "1", "a", "b") // a gets CPU 1, b finds none: empty hints under single-numa-node
	if ok, reason, _ := tm.Admit(both); ok || reason != topologymanager.ReasonTopologyAffinity {
		t.Errorf("no CPU left for b: ok %v reason %q, want TopologyAffinityError", ok, reason)
	}
	if got := m.SharedCPUs().String(); got != "0-1" {
		t.Errorf("the refused pod's first container kept its CPU: shared %s, want 0-1", got)
	}
	// Policy none asks for no hints: the CPU manager's own refusal is the reason.
	none, err := topologymanager.New(machine, topologymanager.Config{Policy: topologymanager.PolicyNone, Scope: topologymanager.ScopeContainer}, m)
	if err != nil {
		t.Fatal(err)
	}
	ok, reason, msg := none.Admit(both)
	if ok || reason != "UnexpectedAdmissionError" || msg != "Allocate failed due to not enough cpus available to satisfy request: requested=1, available=0, which is unexpected" {
		t.Errorf("no CPU left: ok %v reason %q message %q", ok, reason, msg)
	}
	if got := m.SharedCPUs().String(); got != "0-1" {
		t.Errorf("the refused pod's first container kept its CPU: shared %s, want 0-1", got)
	}
}
