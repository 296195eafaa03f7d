package deviceplugin

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// candidates are the devices one container's request of one resource can be met from.
type candidates struct {
	required int
	// reused are devices a finished init container hands on; they are taken first.
	reused []string
	// The free healthy devices, split by the NUMA affinity the topology manager chose: on its
	// nodes, on other nodes, and of no reported node. Without an affinity, or for a resource
	// whose plugin reports no topology, all are unplaced.
	aligned, unaligned, unplaced []string
}

// preferFunc asks the plugin which size devices it prefers out of available, including
// mustInclude (its GetPreferredAllocation).
type preferFunc func(available, mustInclude []string, size int) ([]string, error)

// sortByAffinity splits available by affinity, each part in NUMA-node then ID order.
func (cs *candidates) sortByAffinity(r *pluginResource, available []string, affinity topology.Mask) {
	slices.SortFunc(available, func(a, b string) int {
		return cmp.Or(cmp.Compare(firstNode(r.devices[a].numa), firstNode(r.devices[b].numa)), cmp.Compare(a, b))
	})
	if affinity == 0 || !r.hasTopology() {
		cs.unplaced = available
		return
	}
	for _, id := range available {
		numa := r.devices[id].numa
		switch {
		case len(numa) == 0:
			cs.unplaced = append(cs.unplaced, id)
		case slices.ContainsFunc(numa, func(n int64) bool { return affinity.Has(int(n)) }):
			cs.aligned = append(cs.aligned, id)
		default:
			cs.unaligned = append(cs.unaligned, id)
		}
	}
}

func firstNode(numa []int64) int64 {
	if len(numa) == 0 {
		return 1 << 62 // devices of no node sort last
	}
	return numa[0]
}

// choose picks the devices: the reused ones, then, when the aligned devices can cover the rest,
// from those (the plugin's preference among them first); otherwise all aligned devices, then
// the plugin's preference among the remaining free ones, then unaligned and unplaced devices.
// This is upstream's order, so NUMA alignment the topology manager promised always wins over
// the plugin's preference.
func (cs *candidates) choose(preferred preferFunc) ([]string, error) {
	chosen := slices.Clone(cs.reused)
	take := func(from []string) bool {
		for _, id := range from {
			if len(chosen) == cs.required {
				break
			}
			if !slices.Contains(chosen, id) {
				chosen = append(chosen, id)
			}
		}
		return len(chosen) == cs.required
	}
	ask := func(pool []string) ([]string, error) {
		if preferred == nil {
			return nil, nil
		}
		available := slices.Clone(chosen)
		for _, id := range pool {
			if !slices.Contains(available, id) {
				available = append(available, id)
			}
		}
		ids, err := preferred(available, slices.Clone(chosen), cs.required)
		return intersect(ids, pool), err
	}
	if take(nil) {
		return chosen, nil
	}
	if cs.required-len(chosen) < len(cs.aligned) {
		pref, err := ask(cs.aligned)
		if err != nil {
			return nil, err
		}
		if take(pref) || take(cs.aligned) {
			return chosen, nil
		}
	} else {
		if take(cs.aligned) {
			return chosen, nil
		}
		free := append(append(slices.Clone(cs.aligned), cs.unaligned...), cs.unplaced...)
		pref, err := ask(free)
		if err != nil {
			return nil, err
		}
		if take(pref) || take(cs.unaligned) || take(cs.unplaced) {
			return chosen, nil
		}
	}
	return nil, fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", cs.required, len(chosen))
}

// intersect returns the IDs of ids that are in pool, in ids' order.
func intersect(ids, pool []string) []string {
	var out []string
	for _, id := range ids {
		if slices.Contains(pool, id) {
			out = append(out, id)
		}
	}
	return out
}
