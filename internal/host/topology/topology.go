// Package topology describes the machine the resource managers place work on: its CPUs (with
// their core, socket and NUMA node) and NUMA nodes (with their memory), and the NUMA placements
// the managers offer each other as hints.
package topology

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

// CPU is one logical CPU and where it sits.
type CPU struct {
	ID       int
	Core     int // core ID unique across the machine (hyperthreads share it)
	Socket   int
	NUMANode int
}

// NUMANode is one memory node: the CPUs local to it and its memory.
type NUMANode struct {
	ID          int
	CPUs        cpuset.CPUSet
	MemoryBytes uint64
	// HugePages are the bytes of huge pages pre-allocated on the node, by resource name
	// ("hugepages-2Mi"); nil when the kernel has none.
	HugePages map[v1.ResourceName]uint64
	// Distances to every node by ID, as the kernel reports them (10 is local).
	Distances map[int]int
}

// Machine is the machine's CPU and NUMA layout, read once at start.
type Machine struct {
	CPUs      []CPU // by ID
	NUMANodes []NUMANode
}

// CPUSet returns every CPU of the machine.
func (m *Machine) CPUSet() cpuset.CPUSet {
	ids := make([]int, len(m.CPUs))
	for i, c := range m.CPUs {
		ids[i] = c.ID
	}
	return cpuset.New(ids...)
}

// CPUsPerCore returns how many hyperthreads share a core (1 without SMT).
func (m *Machine) CPUsPerCore() int {
	cores := map[int]int{}
	most := 0
	for _, c := range m.CPUs {
		cores[c.Core]++
		most = max(most, cores[c.Core])
	}
	return most
}

// NUMANodeIDs returns the machine's NUMA node IDs in order.
func (m *Machine) NUMANodeIDs() []int {
	ids := make([]int, len(m.NUMANodes))
	for i, n := range m.NUMANodes {
		ids[i] = n.ID
	}
	slices.Sort(ids)
	return ids
}

// Synthetic builds a machine for tests: sockets × numaPerSocket NUMA nodes, each with
// coresPerNUMA cores of threadsPerCore hyperthreads and memPerNUMA bytes. CPU IDs are
// numbered as Linux numbers them on most x86 machines: first thread of every core, then the
// second, so core k's siblings are k and k+cores.
func Synthetic(sockets, numaPerSocket, coresPerNUMA, threadsPerCore int, memPerNUMA uint64) *Machine {
	m := &Machine{}
	nodes := sockets * numaPerSocket
	cores := nodes * coresPerNUMA
	nodeCPUs := make([][]int, nodes)
	for t := range threadsPerCore {
		for core := range cores {
			node := core / coresPerNUMA
			id := t*cores + core
			m.CPUs = append(m.CPUs, CPU{ID: id, Core: core, Socket: node / numaPerSocket, NUMANode: node})
			nodeCPUs[node] = append(nodeCPUs[node], id)
		}
	}
	for n := range nodes {
		dist := map[int]int{}
		for o := range nodes {
			switch {
			case o == n:
				dist[o] = 10
			case o/numaPerSocket == n/numaPerSocket:
				dist[o] = 11
			default:
				dist[o] = 21
			}
		}
		m.NUMANodes = append(m.NUMANodes, NUMANode{ID: n, CPUs: cpuset.New(nodeCPUs[n]...), MemoryBytes: memPerNUMA, Distances: dist})
	}
	return m
}
