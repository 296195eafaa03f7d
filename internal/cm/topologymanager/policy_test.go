package topologymanager

import (
	"testing"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

// hint builds a hint on the given nodes (none: anywhere).
func hint(preferred bool, nodes ...int) topology.Hint {
	return topology.Hint{NUMANodes: topology.MaskOf(nodes...), Preferred: preferred}
}

type provided = map[string][]topology.Hint

func twoNodes() *topology.Machine { return topology.Synthetic(2, 1, 2, 2, 1<<30) }

func TestMergeByPolicy(t *testing.T) {
	cases := []struct {
		name      string
		providers []provided
		// want per policy: best-effort, restricted, single-numa-node
		want  [3]topology.Hint
		admit [3]bool
	}{
		{"no providers: anywhere", nil,
			[3]topology.Hint{hint(true, 0, 1), hint(true, 0, 1), hint(true)}, [3]bool{true, true, true}},
		{"a provider without preference", []provided{nil},
			[3]topology.Hint{hint(true, 0, 1), hint(true, 0, 1), hint(true)}, [3]bool{true, true, true}},
		{"a resource with nil hints", []provided{{"cpu": nil}},
			[3]topology.Hint{hint(true, 0, 1), hint(true, 0, 1), hint(true)}, [3]bool{true, true, true}},
		{"a resource that cannot be satisfied", []provided{{"cpu": {}}},
			[3]topology.Hint{hint(false, 0, 1), hint(false, 0, 1), hint(false)}, [3]bool{true, false, false}},
		{"narrowest preferred wins", []provided{{"cpu": {hint(true, 0), hint(true, 1), hint(false, 0, 1)}}},
			[3]topology.Hint{hint(true, 0), hint(true, 0), hint(true, 0)}, [3]bool{true, true, true}},
		{"two providers agree on node 1", []provided{{"cpu": {hint(true, 0), hint(true, 1)}}, {"gpu": {hint(true, 1)}}},
			[3]topology.Hint{hint(true, 1), hint(true, 1), hint(true, 1)}, [3]bool{true, true, true}},
		{"two providers on different nodes", []provided{{"cpu": {hint(true, 0)}}, {"gpu": {hint(true, 1)}}},
			[3]topology.Hint{hint(false, 0, 1), hint(false, 0, 1), hint(false)}, [3]bool{true, false, false}},
		{"a preferred wide hint beats an unpreferred narrow one", []provided{{"cpu": {hint(false, 0), hint(true, 0, 1)}}},
			[3]topology.Hint{hint(true, 0, 1), hint(true, 0, 1), hint(false)}, [3]bool{true, true, false}},
		{"one resource needs both nodes", []provided{{"cpu": {hint(true, 0, 1)}}, {"gpu": {hint(true, 0), hint(true, 1), hint(false, 0, 1)}}},
			[3]topology.Hint{hint(false, 0, 1), hint(false, 0, 1), hint(false)}, [3]bool{true, false, false}},
		{"equal placements from two resources stay preferred", []provided{{"cpu": {hint(true, 0, 1)}, "memory": {hint(true, 0, 1)}}},
			[3]topology.Hint{hint(true, 0, 1), hint(true, 0, 1), hint(false)}, [3]bool{true, true, false}},
		{"an anywhere hint does not spoil the preference", []provided{{"cpu": {hint(true, 1)}, "memory": nil}},
			[3]topology.Hint{hint(true, 1), hint(true, 1), hint(true, 1)}, [3]bool{true, true, true}},
	}
	policies := []string{PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode}
	for _, tc := range cases {
		for i, name := range policies {
			p := newPolicy(name, twoNodes(), cmpolicy.TopologyOptions{})
			got, admit := p.merge(tc.providers)
			if got != tc.want[i] || admit != tc.admit[i] {
				t.Errorf("%s, %s: got %+v admit=%v, want %+v admit=%v", tc.name, name, got, admit, tc.want[i], tc.admit[i])
			}
		}
	}
}

// Among unpreferred placements the merge creeps up to the size the most demanding resource
// needs, and no further.
func TestMergeUnpreferredAimsAtTheWidestNeed(t *testing.T) {
	m := topology.Synthetic(1, 4, 1, 1, 0)
	p := newPolicy(PolicyBestEffort, m, cmpolicy.TopologyOptions{})
	// cpu needs two nodes at least; memory could do with one but prefers it, so nothing is
	// preferred once they meet.
	got, _ := p.merge([]provided{
		{"cpu": {hint(true, 2, 3), hint(false, 0, 1, 2, 3)}},
		{"memory": {hint(true, 3), hint(false, 1, 2, 3), hint(false, 2, 3)}},
	})
	if want := hint(false, 2, 3); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestSingleNUMANodeOnOneNodeMachineSaysAnywhere(t *testing.T) {
	p := newPolicy(PolicySingleNUMANode, topology.Synthetic(1, 1, 2, 1, 0), cmpolicy.TopologyOptions{})
	got, admit := p.merge([]provided{{"cpu": {hint(true, 0)}}})
	if got != hint(true) || !admit {
		t.Errorf("got %+v admit=%v, want anywhere, admitted", got, admit)
	}
}

func TestPreferClosestNUMANodes(t *testing.T) {
	// Nodes 0,1 share socket 0 (distance 11), 2,3 socket 1; across sockets 21.
	m := topology.Synthetic(2, 2, 2, 1, 0)
	hints := []provided{{"cpu": {hint(true, 1, 2), hint(true, 2, 3)}}}
	plain, _ := newPolicy(PolicyBestEffort, m, cmpolicy.TopologyOptions{}).merge(hints)
	if want := hint(true, 1, 2); plain != want {
		t.Errorf("without the option: got %+v, want the lower-numbered %+v", plain, want)
	}
	closest, _ := newPolicy(PolicyBestEffort, m, cmpolicy.TopologyOptions{PreferClosestNUMA: true}).merge(hints)
	if want := hint(true, 2, 3); closest != want {
		t.Errorf("prefer-closest-numa-nodes: got %+v, want the same-socket %+v", closest, want)
	}
	restricted, _ := newPolicy(PolicyRestricted, m, cmpolicy.TopologyOptions{PreferClosestNUMA: true}).merge(hints)
	if want := hint(true, 2, 3); restricted != want {
		t.Errorf("restricted with prefer-closest-numa-nodes: got %+v, want %+v", restricted, want)
	}
	// Size still comes first.
	narrow, _ := newPolicy(PolicyBestEffort, m, cmpolicy.TopologyOptions{PreferClosestNUMA: true}).merge([]provided{{"cpu": {hint(true, 2, 3), hint(true, 1)}}})
	if want := hint(true, 1); narrow != want {
		t.Errorf("got %+v, want the single node %+v", narrow, want)
	}
}
