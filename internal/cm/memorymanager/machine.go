package memorymanager

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// NUMAMemory is what one NUMA node has: its memory (the kernel's MemTotal for the node) and
// its pre-allocated huge pages, by resource name ("hugepages-2Mi"), in bytes.
type NUMAMemory struct {
	ID        int
	Memory    uint64
	HugePages map[v1.ResourceName]uint64
}

// NodesOf lists the NUMA nodes of machine with their memory and pre-allocated huge pages.
func NodesOf(machine *topology.Machine) []NUMAMemory {
	nodes := make([]NUMAMemory, 0, len(machine.NUMANodes))
	for _, n := range machine.NUMANodes {
		nodes = append(nodes, NUMAMemory{ID: n.ID, Memory: n.MemoryBytes, HugePages: n.HugePages})
	}
	return nodes
}

// emptyMachine is the machine state with nothing assigned: each node's memory and huge pages,
// less what reserved keeps for the system. Huge pages are not ordinary memory, so they come
// off the node's allocatable memory too.
func emptyMachine(nodes []NUMAMemory, reserved map[int]map[v1.ResourceName]uint64) (numaNodeMap, error) {
	m := numaNodeMap{}
	for _, node := range nodes {
		state := &numaNodeState{MemoryMap: map[v1.ResourceName]*memoryTable{}, Cells: []int{node.ID}}
		var huge uint64
		for name, total := range node.HugePages {
			t, err := table(node.ID, name, total, reserved[node.ID][name], 0)
			if err != nil {
				return nil, err
			}
			state.MemoryMap[name] = t
			huge += total
		}
		t, err := table(node.ID, v1.ResourceMemory, node.Memory, reserved[node.ID][v1.ResourceMemory], huge)
		if err != nil {
			return nil, err
		}
		state.MemoryMap[v1.ResourceMemory] = t
		m[node.ID] = state
	}
	return m, nil
}

// table is one kind of memory of a node with nothing assigned: all of it free but what the
// system keeps and what other kinds (huge pages) take.
func table(node int, name v1.ResourceName, total, systemReserved, takenElsewhere uint64) (*memoryTable, error) {
	if systemReserved+takenElsewhere > total {
		return nil, fmt.Errorf("reservedMemory: NUMA node %d has %d bytes of %s (less %d in huge pages), less than the %d reserved", node, total, name, takenElsewhere, systemReserved)
	}
	free := total - systemReserved - takenElsewhere
	return &memoryTable{TotalMemSize: total, SystemReserved: systemReserved, Allocatable: free, Free: free}, nil
}

// expectedMachine is the machine state the assignments should have left: empty, with every
// block taken from its nodes again, the way Allocate takes it.
func expectedMachine(empty numaNodeMap, entries assignments) (numaNodeMap, error) {
	s := &static{machine: empty.clone()}
	for uid, containers := range entries {
		for name, blocks := range containers {
			for _, b := range blocks {
				for _, id := range b.NUMAAffinity {
					n, ok := s.machine[id]
					if !ok {
						return nil, fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses the NUMA that does not exist", uid, name)
					}
					if n.MemoryMap[b.Type] == nil {
						return nil, fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses memory resource that does not exist", uid, name)
					}
				}
				s.take(b.NUMAAffinity, b.Type, b.Size)
			}
		}
	}
	return s.machine, nil
}

// sameMachine says whether a restored machine state is the one expected: same nodes, totals,
// reservations and groups, and per group the same free and reserved memory (within a group,
// which node a block's memory came from may differ).
func sameMachine(got, want numaNodeMap) bool {
	if len(got) != len(want) {
		return false
	}
	for id, g := range got {
		w, ok := want[id]
		if !ok || g == nil || g.NumberOfAssignments != w.NumberOfAssignments || maskOf(g.Cells) != maskOf(w.Cells) || len(g.MemoryMap) != len(w.MemoryMap) {
			return false
		}
		for name, gt := range g.MemoryMap {
			wt, ok := w.MemoryMap[name]
			if !ok || gt == nil || gt.TotalMemSize != wt.TotalMemSize || gt.SystemReserved != wt.SystemReserved || gt.Allocatable != wt.Allocatable {
				return false
			}
			if groupSum(got, g.Cells, name) != groupSum(want, g.Cells, name) {
				return false
			}
		}
	}
	return true
}

// groupSum adds free and reserved memory of one kind over a group of nodes.
func groupSum(m numaNodeMap, cells []int, name v1.ResourceName) [2]uint64 {
	var sum [2]uint64
	for _, id := range cells {
		if n := m[id]; n != nil && n.MemoryMap[name] != nil {
			sum[0] += n.MemoryMap[name].Free
			sum[1] += n.MemoryMap[name].Reserved
		}
	}
	return sum
}

// isMemoryKind says whether the memory manager places name: memory and huge pages.
func isMemoryKind(name v1.ResourceName) bool {
	return name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// containerRequests are c's requests of memory kinds, in bytes.
func containerRequests(c *v1.Container) (map[v1.ResourceName]uint64, error) {
	req := map[v1.ResourceName]uint64{}
	for name, q := range c.Resources.Requests {
		if !isMemoryKind(name) {
			continue
		}
		bytes, ok := q.AsInt64()
		if !ok || bytes < 0 {
			return nil, fmt.Errorf("[memorymanager] failed to represent quantity as int64")
		}
		req[name] = uint64(bytes)
	}
	return req, nil
}

// podRequests are what the pod needs of memory kinds at most at once: its app containers and
// sidecars together, or an init container beside the sidecars started before it if more.
func podRequests(pod *v1.Pod) (map[v1.ResourceName]uint64, error) {
	for i := range pod.Spec.InitContainers {
		if _, err := containerRequests(&pod.Spec.InitContainers[i]); err != nil {
			return nil, err
		}
	}
	for i := range pod.Spec.Containers {
		if _, err := containerRequests(&pod.Spec.Containers[i]); err != nil {
			return nil, err
		}
	}
	folded := sidecar.Fold(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })
	req := map[v1.ResourceName]uint64{}
	for name, q := range folded {
		if isMemoryKind(name) {
			req[name] = uint64(q.Value())
		}
	}
	return req, nil
}
