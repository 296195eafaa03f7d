package nodeui

import (
	"github.com/nodelet/nodelet/internal/host/topology"
)

// Setting is one resource manager setting the page lists, as the configuration names it.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// topologyView is the machine's layout and the resource managers' policies (api/node).
type topologyView struct {
	Sockets     int            `json:"sockets"`
	Cores       int            `json:"cores"`
	CPUs        int            `json:"cpus"`
	CPUsPerCore int            `json:"cpusPerCore"`
	NUMANodes   []numaNodeView `json:"numaNodes"`
	Policies    []Setting      `json:"policies"`
}

type numaNodeView struct {
	ID          int    `json:"id"`
	CPUs        string `json:"cpus"` // a CPU list, "0-3,8-11"
	MemoryBytes uint64 `json:"memoryBytes"`
	// Distances to every node, in node order (10 is local).
	Distances []int `json:"distances"`
}

func newTopologyView(m *topology.Machine, policies []Setting) *topologyView {
	out := &topologyView{CPUs: len(m.CPUs), CPUsPerCore: m.CPUsPerCore(), NUMANodes: []numaNodeView{}, Policies: policies}
	if out.Policies == nil {
		out.Policies = []Setting{}
	}
	sockets, cores := map[int]bool{}, map[int]bool{}
	for _, c := range m.CPUs {
		sockets[c.Socket], cores[c.Core] = true, true
	}
	out.Sockets, out.Cores = len(sockets), len(cores)
	ids := m.NUMANodeIDs()
	for _, n := range m.NUMANodes {
		v := numaNodeView{ID: n.ID, CPUs: n.CPUs.String(), MemoryBytes: n.MemoryBytes, Distances: []int{}}
		for _, o := range ids {
			v.Distances = append(v.Distances, n.Distances[o])
		}
		out.NUMANodes = append(out.NUMANodes, v)
	}
	return out
}
