package memorymanager

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// static is upstream's Static policy: a Guaranteed pod's containers get their memory (and huge
// pages) set aside on the fewest NUMA nodes that hold it, and are pinned there (cpuset.mems).
// A node serves either single-node blocks or the multi-node blocks of one group of nodes.
type static struct {
	machine numaNodeMap
	entries assignments
	// initial is the machine state with nothing assigned (what the node has less what
	// reservedMemory keeps), against which a restored state is checked.
	initial numaNodeMap
	// reusable is memory of one pod's regular init containers that its later containers may
	// use again (init containers run one at a time, before the others): by NUMA mask and kind.
	// Only the pod being admitted is kept, as upstream.
	reusable    map[topology.Mask]map[v1.ResourceName]uint64
	reusableFor string // the pod UID reusable belongs to
}

// hints returns, per memory kind requested, the NUMA masks whose free memory (with what the
// pod's init containers leave for reuse) holds the request, preferred when no wider than the
// narrowest mask whose allocatable could hold it. A kind no mask can hold is left out, which
// the topology manager reads as no preference (and Allocate then refuses), as upstream.
func (s *static) hints(uid string, req map[v1.ResourceName]uint64) map[string][]topology.Hint {
	ids := s.nodeIDs()
	narrowest := len(ids)
	var fits []topology.Mask
	forEachMask(ids, func(mask topology.Mask) {
		if !s.holds(mask, req, func(t *memoryTable) uint64 { return t.Allocatable }) {
			return
		}
		narrowest = min(narrowest, mask.Count())
		if !s.groupAllows(mask) {
			return
		}
		free := func(t *memoryTable) uint64 { return t.Free }
		if !s.holdsWithReuse(uid, mask, req, free) {
			return
		}
		fits = append(fits, mask)
	})
	hints := map[string][]topology.Hint{}
	for _, mask := range fits {
		for name := range req {
			hints[string(name)] = append(hints[string(name)], topology.Hint{NUMANodes: mask, Preferred: mask.Count() == narrowest})
		}
	}
	return hints
}

// holds says whether the nodes of mask together have req of every kind, counting amount.
func (s *static) holds(mask topology.Mask, req map[v1.ResourceName]uint64, amount func(*memoryTable) uint64) bool {
	for name, size := range req {
		if s.total(mask, name, amount) < size {
			return false
		}
	}
	return true
}

func (s *static) holdsWithReuse(uid string, mask topology.Mask, req map[v1.ResourceName]uint64, amount func(*memoryTable) uint64) bool {
	for name, size := range req {
		if s.total(mask, name, amount)+s.reusableOn(uid, mask, name) < size {
			return false
		}
	}
	return true
}

func (s *static) total(mask topology.Mask, name v1.ResourceName, amount func(*memoryTable) uint64) uint64 {
	var sum uint64
	for _, id := range mask.IDs() {
		if n := s.machine[id]; n != nil && n.MemoryMap[name] != nil {
			sum += amount(n.MemoryMap[name])
		}
	}
	return sum
}

// groupAllows says whether mask may take a new block: a single node that is not part of a
// group, or a group whose nodes are unused or already grouped exactly so.
func (s *static) groupAllows(mask topology.Mask) bool {
	ids := mask.IDs()
	for _, id := range ids {
		n := s.machine[id]
		switch {
		case n == nil: // a node the memory manager does not know holds nothing
			return false
		case len(ids) == 1 && len(n.Cells) > 1:
			return false
		case len(ids) > 1 && n.NumberOfAssignments > 0 && maskOf(n.Cells) != mask:
			return false
		}
	}
	return len(ids) > 0
}

// allocate sets c's memory aside within affinity (zero: the policy's own choice) and records
// its blocks. Errors read as upstream's, which admission shows in the pod's message.
func (s *static) allocate(pod *v1.Pod, c *v1.Container, affinity topology.Hint) error {
	uid := string(pod.UID)
	if blocks := s.entries.get(uid, c.Name); blocks != nil {
		s.noteReusable(pod, c, blocks) // admitted before (nodelet restarted): keep what it has
		return nil
	}
	req, err := containerRequests(c)
	if err != nil {
		return err
	}
	best := affinity
	if best.NUMANodes == 0 {
		own, ok := s.bestOf(s.hints(uid, req))
		if !ok {
			return fmt.Errorf("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available")
		}
		if !own.Preferred && affinity.Preferred {
			return fmt.Errorf("[memorymanager] failed to find the default preferred hint")
		}
		best = own
	}
	if !s.holds(best.NUMANodes, req, func(t *memoryTable) uint64 { return t.Free }) {
		// The topology manager's merge can narrow our hint: widen it again to one that holds.
		wider, err := s.widen(uid, req, best.NUMANodes)
		if err != nil {
			return err
		}
		if !wider.Preferred && best.Preferred {
			return fmt.Errorf("[memorymanager] failed to find the extended preferred hint")
		}
		best = wider
	}
	// Upstream checks this for multi-node affinities only, and lets a single-node block onto
	// a node of a group, which breaks the group's bookkeeping: nodelet refuses that too.
	if !s.groupAllows(best.NUMANodes) {
		return fmt.Errorf("[memorymanager] preferred hint violates NUMA node allocation")
	}
	s.place(pod, c, best.NUMANodes, req)
	return nil
}

// place records c's blocks on mask and takes their memory from the nodes, less what the pod's
// earlier init containers hold there and c may reuse.
func (s *static) place(pod *v1.Pod, c *v1.Container, mask topology.Mask, req map[v1.ResourceName]uint64) {
	uid := string(pod.UID)
	var blocks []block
	for _, name := range sortedNames(req) {
		size := req[name]
		blocks = append(blocks, block{NUMAAffinity: mask.IDs(), Type: name, Size: size})
		take := size - min(size, s.reusableOn(uid, mask, name))
		s.take(mask.IDs(), name, take)
	}
	s.noteReusable(pod, c, blocks)
	s.entries.set(uid, c.Name, blocks)
	s.shrinkInitBlocks(pod, c, blocks)
}

// take reserves size bytes of one kind from the nodes in order, and groups the nodes.
func (s *static) take(ids []int, name v1.ResourceName, size uint64) {
	for _, id := range ids {
		n := s.machine[id]
		n.NumberOfAssignments++
		n.Cells = slices.Clone(ids)
		t := n.MemoryMap[name]
		if size == 0 || t == nil || t.Free == 0 {
			continue
		}
		got := min(size, t.Free)
		t.Free -= got
		t.Reserved += got
		size -= got
	}
}

// release gives a container's blocks back to their nodes and forgets the container.
func (s *static) release(uid, container string) bool {
	blocks := s.entries.get(uid, container)
	if blocks == nil {
		return false
	}
	s.entries.remove(uid, container)
	for _, b := range blocks {
		size := b.Size
		for _, id := range b.NUMAAffinity {
			n := s.machine[id]
			if n == nil {
				continue
			}
			n.NumberOfAssignments--
			if n.NumberOfAssignments == 0 {
				n.Cells = []int{id}
			}
			t := n.MemoryMap[b.Type]
			if size == 0 || t == nil || t.Reserved == 0 {
				continue
			}
			back := min(size, t.Reserved)
			t.Reserved -= back
			t.Free += back
			size -= back
		}
	}
	return true
}

// bestOf picks, among the memory hints, a preferred one first, then the narrowest, then the
// lowest nodes; ok is false when there is none.
func (s *static) bestOf(hints map[string][]topology.Hint) (best topology.Hint, ok bool) {
	for _, h := range hints[string(v1.ResourceMemory)] {
		if !ok || h.Preferred && !best.Preferred || h.Preferred == best.Preferred && narrower(h.NUMANodes, best.NUMANodes) {
			best, ok = h, true
		}
	}
	return best, ok
}

// widen returns the best hint that holds req and includes every node of mask.
func (s *static) widen(uid string, req map[v1.ResourceName]uint64, mask topology.Mask) (topology.Hint, error) {
	hints := s.hints(uid, req)
	var within []topology.Hint
	for _, h := range hints[string(v1.ResourceMemory)] {
		if mask.IsSubsetOf(h.NUMANodes) {
			within = append(within, h)
		}
	}
	best, ok := s.bestOf(map[string][]topology.Hint{string(v1.ResourceMemory): within})
	if !ok {
		return best, fmt.Errorf("[memorymanager] failed to find NUMA nodes to extend the current topology hint")
	}
	return best, nil
}

func (s *static) nodeIDs() []int {
	ids := make([]int, 0, len(s.machine))
	for id := range s.machine {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// narrower says whether a is the better of two masks: fewer nodes, or as many and lower.
func narrower(a, b topology.Mask) bool {
	if a.Count() != b.Count() {
		return a.Count() < b.Count()
	}
	return a < b
}

// forEachMask calls visit with every non-empty subset of ids: all single nodes first, then
// pairs, and so on, each size in lexical order (upstream's order).
func forEachMask(ids []int, visit func(topology.Mask)) {
	var pick func(from []int, chosen topology.Mask, left int)
	pick = func(from []int, chosen topology.Mask, left int) {
		if left == 0 {
			visit(chosen)
			return
		}
		for i, id := range from {
			pick(from[i+1:], chosen|topology.MaskOf(id), left-1)
		}
	}
	for size := 1; size <= len(ids); size++ {
		pick(ids, 0, size)
	}
}

func maskOf(ids []int) topology.Mask { return topology.MaskOf(ids...) }

func sortedNames(req map[v1.ResourceName]uint64) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(req))
	for name := range req {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
