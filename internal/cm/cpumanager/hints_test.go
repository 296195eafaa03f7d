package cpumanager

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

func TestContainerHints(t *testing.T) {
	// Two NUMA nodes of two cores each, no HT; CPU 0 (node 0) is reserved.
	m, _, _ := newManager(t, topology.Synthetic(1, 2, 2, 1, 0), cmpolicy.CPUStatic, 1, nil)
	node0, node1, both := topology.MaskOf(0), topology.MaskOf(1), topology.MaskOf(0, 1)
	for _, tc := range []struct {
		cpu  string
		want []topology.Hint
	}{
		{"1", []topology.Hint{{NUMANodes: node0, Preferred: true}, {NUMANodes: node1, Preferred: true}, {NUMANodes: both}}},
		// Node 0 has one free CPU (1) besides the reserved one: only node 1 holds two.
		{"2", []topology.Hint{{NUMANodes: node1, Preferred: true}, {NUMANodes: both}}},
		{"3", []topology.Hint{{NUMANodes: both, Preferred: true}}},
		{"4", []topology.Hint{}},
	} {
		p := pod("p"+tc.cpu, tc.cpu, "app")
		got := m.ContainerHints(p, &p.Spec.Containers[0])
		if !reflect.DeepEqual(got[cpuResource], tc.want) {
			t.Errorf("%s CPUs: hints %v, want %v", tc.cpu, got[cpuResource], tc.want)
		}
	}
	be := pod("be", "", "app")
	if got := m.ContainerHints(be, &be.Spec.Containers[0]); got != nil {
		t.Errorf("BestEffort container: hints %v, want none", got)
	}
}

func TestHintsOfAnAllocatedContainerAreItsOwn(t *testing.T) {
	m, _, _ := newManager(t, topology.Synthetic(1, 2, 2, 1, 0), cmpolicy.CPUStatic, 1, nil)
	p := pod("p", "2", "app")
	if err := m.Allocate(p, &p.Spec.Containers[0], topology.Hint{NUMANodes: topology.MaskOf(1)}); err != nil {
		t.Fatal(err)
	}
	want := []topology.Hint{{NUMANodes: topology.MaskOf(1), Preferred: true}, {NUMANodes: topology.MaskOf(0, 1)}}
	if got := m.ContainerHints(p, &p.Spec.Containers[0]); !reflect.DeepEqual(got[cpuResource], want) {
		t.Errorf("hints %v, want %v", got[cpuResource], want)
	}
	changed := p.DeepCopy()
	changed.Spec.Containers[0] = container("app", "1")
	if got := m.ContainerHints(changed, &changed.Spec.Containers[0]); got == nil || len(got[cpuResource]) != 0 {
		t.Errorf("request differs from what is held: hints %v, want an empty list", got)
	}
}

func TestPodHints(t *testing.T) {
	m, _, _ := newManager(t, topology.Synthetic(1, 2, 2, 1, 0), cmpolicy.CPUStatic, 1, nil)
	p := pod("p", "1", "a", "b")
	p.Spec.InitContainers = []v1.Container{container("init", "1")}
	// The pod needs 2 at its peak (a and b together): node 1 alone holds that.
	want := []topology.Hint{{NUMANodes: topology.MaskOf(1), Preferred: true}, {NUMANodes: topology.MaskOf(0, 1)}}
	if got := m.PodHints(p); !reflect.DeepEqual(got[cpuResource], want) {
		t.Errorf("pod hints %v, want %v", got[cpuResource], want)
	}
}
