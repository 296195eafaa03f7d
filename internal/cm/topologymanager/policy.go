package topologymanager

import (
	"maps"
	"slices"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

// The topology manager policies, as the kubelet configuration names them.
const (
	PolicyNone           = "none"
	PolicyBestEffort     = "best-effort"
	PolicyRestricted     = "restricted"
	PolicySingleNUMANode = "single-numa-node"
)

// policy merges the providers' hints into one placement and says whether the pod may run with
// it. Every policy but none shares one merge; they differ in which hints they consider and in
// what they admit.
type policy struct {
	name  string
	nodes topology.Mask // every NUMA node of the machine: a placement that says nothing narrower
	// closest ranks masks of equal size by their nodes' average distance (prefer-closest-numa-nodes);
	// distances holds the machine's distances when it is set.
	closest   bool
	distances map[int]map[int]int
}

func newPolicy(name string, m *topology.Machine, opts cmpolicy.TopologyOptions) *policy {
	p := &policy{name: name, nodes: topology.MaskOf(m.NUMANodeIDs()...)}
	// As upstream, single-numa-node has one size of placement only, so distance never decides.
	if opts.PreferClosestNUMA && name != PolicySingleNUMANode {
		p.closest = true
		p.distances = map[int]map[int]int{}
		for _, n := range m.NUMANodes {
			p.distances[n.ID] = n.Distances
		}
	}
	return p
}

// merge returns the placement for one container (or pod) from every provider's hints, and
// whether the policy admits it.
func (p *policy) merge(perProvider []map[string][]topology.Hint) (topology.Hint, bool) {
	lists := hintLists(perProvider)
	if p.name == PolicySingleNUMANode {
		lists = singleNodeHints(lists)
	}
	best := p.bestOf(lists)
	switch p.name {
	case PolicyRestricted:
		return best, best.Preferred
	case PolicySingleNUMANode:
		if best.NUMANodes == p.nodes { // the whole machine is no single node: say "anywhere"
			best.NUMANodes = 0
		}
		return best, best.Preferred
	default: // best-effort admits whatever it found
		return best, true
	}
}

// hintLists flattens the providers' answers into one list of candidate hints per resource. A
// provider with no answer, or a resource whose hints are nil, may go anywhere (a preferred
// "anywhere" hint); a resource with an empty list cannot be satisfied (an unpreferred
// "anywhere" hint), which keeps the merge going so best-effort still places the container.
func hintLists(perProvider []map[string][]topology.Hint) [][]topology.Hint {
	anywhere := []topology.Hint{{Preferred: true}}
	var lists [][]topology.Hint
	for _, byResource := range perProvider {
		if len(byResource) == 0 {
			lists = append(lists, anywhere)
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(byResource)) {
			hints := byResource[name]
			switch {
			case hints == nil:
				lists = append(lists, anywhere)
			case len(hints) == 0:
				lists = append(lists, []topology.Hint{{Preferred: false}})
			default:
				lists = append(lists, hints)
			}
		}
	}
	return lists
}

// singleNodeHints keeps only the preferred hints that name one NUMA node or none.
func singleNodeHints(lists [][]topology.Hint) [][]topology.Hint {
	out := make([][]topology.Hint, len(lists))
	for i, hints := range lists {
		kept := []topology.Hint{}
		for _, h := range hints {
			if h.Preferred && h.NUMANodes.Count() <= 1 {
				kept = append(kept, h)
			}
		}
		out[i] = kept
	}
	return out
}

// bestOf tries every combination of one hint per resource and keeps the best merged placement.
// When no combination fits on any node it returns the whole machine, unpreferred.
func (p *policy) bestOf(lists [][]topology.Hint) topology.Hint {
	target := widestNarrowest(lists)
	var best topology.Hint
	found := false
	eachCombination(lists, func(combo []topology.Hint) {
		candidate := p.combine(combo)
		if candidate.NUMANodes == 0 {
			return // no node holds every resource of this combination
		}
		if !found {
			best, found = candidate, true
			return
		}
		best = p.better(best, candidate, target)
	})
	if !found {
		return topology.Hint{NUMANodes: p.nodes}
	}
	return best
}

// combine intersects a combination's placements. It is preferred only when every hint is
// preferred and all hints that name nodes name the same ones.
func (p *policy) combine(combo []topology.Hint) topology.Hint {
	merged := topology.Hint{NUMANodes: p.nodes, Preferred: true}
	var first topology.Mask
	for _, h := range combo {
		if !h.Preferred {
			merged.Preferred = false
		}
		if h.NUMANodes == 0 {
			continue
		}
		if first == 0 {
			first = h.NUMANodes
		} else if h.NUMANodes != first {
			merged.Preferred = false
		}
		merged.NUMANodes &= h.NUMANodes
	}
	return merged
}

// better chooses between the best placement so far and a candidate: a preferred one over an
// unpreferred one; among preferred ones the fitter mask; among unpreferred ones the one whose
// size comes closest to target from below (the most nodes any single resource needs), as
// upstream ranks them.
func (p *policy) better(current, candidate topology.Hint, target int) topology.Hint {
	if current.Preferred != candidate.Preferred {
		if candidate.Preferred {
			return candidate
		}
		return current
	}
	if current.Preferred {
		return p.fitter(current, candidate)
	}
	cur, cand := current.NUMANodes.Count(), candidate.NUMANodes.Count()
	switch {
	case cur > target:
		return p.fitter(current, candidate)
	case cur == target:
		if cand != target {
			return current
		}
		return p.fitter(current, candidate)
	case cand > target:
		return current
	case cand == target:
		return candidate
	case cand > cur:
		return candidate
	case cand < cur:
		return current
	}
	return p.fitter(current, candidate)
}

// fitter returns the hint with the narrower mask (fewer nodes, then lower-numbered ones), or with
// prefer-closest-numa-nodes the one whose nodes are closest together; current on a tie.
func (p *policy) fitter(current, candidate topology.Hint) topology.Hint {
	a, b := current.NUMANodes, candidate.NUMANodes
	if a == b {
		return current
	}
	if a.Count() != b.Count() || !p.closest {
		if narrower(a, b) {
			return current
		}
		return candidate
	}
	da, db := p.averageDistance(a), p.averageDistance(b)
	if da == db {
		if a < b {
			return current
		}
		return candidate
	}
	if da < db {
		return current
	}
	return candidate
}

// narrower says whether a has fewer nodes than b, or as many with lower-numbered ones.
func narrower(a, b topology.Mask) bool {
	if a.Count() != b.Count() {
		return a.Count() < b.Count()
	}
	return a < b
}

// averageDistance is the mean distance over every ordered pair of the mask's nodes (each node
// with itself included).
func (p *policy) averageDistance(m topology.Mask) float64 {
	ids := m.IDs()
	if len(ids) == 0 {
		return 0
	}
	sum := 0
	for _, i := range ids {
		for _, j := range ids {
			sum += p.distances[i][j]
		}
	}
	return float64(sum) / float64(len(ids)*len(ids))
}

// widestNarrowest is the size of the narrowest placement of the resource that needs the most
// nodes: no unpreferred merge can do with fewer.
func widestNarrowest(lists [][]topology.Hint) int {
	most := 0
	for _, hints := range lists {
		var narrowest topology.Mask
		for _, h := range hints {
			if h.NUMANodes != 0 && (narrowest == 0 || narrower(h.NUMANodes, narrowest)) {
				narrowest = h.NUMANodes
			}
		}
		most = max(most, narrowest.Count())
	}
	return most
}

// eachCombination calls visit with every choice of one hint from each list, in order. With no
// lists it visits the one empty combination; a list without hints leaves none to visit.
func eachCombination(lists [][]topology.Hint, visit func([]topology.Hint)) {
	combo := make([]topology.Hint, len(lists))
	var walk func(i int)
	walk = func(i int) {
		if i == len(lists) {
			visit(combo)
			return
		}
		for _, h := range lists[i] {
			combo[i] = h
			walk(i + 1)
		}
	}
	walk(0)
}
