package cpumanager

import (
	"fmt"
	"math"
	"slices"

	"k8s.io/utils/cpuset"
)

// takeDistributed returns n CPUs of available spread evenly over the fewest NUMA nodes that
// can hold them (the distribute-cpus-across-numa option), in groups of groupSize CPUs (a
// whole core with full-pcpus-only). Among the NUMA node sets that can, it picks the one that
// leaves the machine's free CPUs most balanced across nodes. When no set can be split evenly
// it falls back to packing.
func takeDistributed(machine layout, available cpuset.CPUSet, n, groupSize int) (cpuset.CPUSet, error) {
	if n%groupSize != 0 {
		return takePacked(machine, available, n)
	}
	a := newAccumulator(machine, available, n)
	if a.satisfied() {
		return a.result, nil
	}
	if a.needed > len(a.free) {
		return cpuset.New(), fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, available.Size())
	}
	numas := a.sortedNUMANodes()
	fewest, most := a.numaNodesNeeded(groupSize)
	for k := fewest; k <= most; k++ {
		combo, remainderNodes := a.bestSpread(numas, k, groupSize)
		if combo == nil {
			continue
		}
		a.takeSpread(combo, remainderNodes, groupSize)
		if a.needed != 0 {
			return cpuset.New(), fmt.Errorf("accounting error, %d CPUs left to allocate", a.needed)
		}
		return a.result, nil
	}
	return takePacked(machine, available, n)
}

// numaNodesNeeded returns the fewest and most NUMA nodes the request could be spread over.
func (a *accumulator) numaNodesNeeded(groupSize int) (fewest, most int) {
	groups := (len(a.machine)-1)/groupSize + 1
	groupsPerNode := (groups-1)/len(a.machine.ids(numaOf, nil)) + 1
	groupsNeeded := (a.needed-1)/groupSize + 1
	return (groupsNeeded-1)/groupsPerNode + 1, min(groupsNeeded, len(a.free.ids(numaOf, nil)))
}

// bestSpread returns the set of k NUMA nodes (of numas) that can take an even share of the
// request, and the subset of it that takes the remainder, leaving the free CPUs the most
// balanced; nil when no k nodes can.
func (a *accumulator) bestSpread(numas []int, k, groupSize int) (combo, remainderNodes []int) {
	best := math.MaxFloat64
	combinations(numas, k, func(c []int) bool {
		if best == 0 {
			return false
		}
		if balance, rest, ok := a.spreadOver(numas, c, groupSize); ok && balance < best {
			best, combo, remainderNodes = balance, slices.Clone(c), rest
		}
		return true
	})
	return combo, remainderNodes
}

// spreadOver scores spreading the request over combo: the balance (standard deviation of the
// free CPUs per node afterwards) and the nodes taking the remainder; ok is false when combo
// cannot hold an even share.
func (a *accumulator) spreadOver(numas, combo []int, groupSize int) (balance float64, remainderNodes []int, ok bool) {
	free := map[int]int{}
	for _, id := range numas {
		free[id] = a.free.in(numaOf, id).Size()
	}
	total, groups := 0, 0
	for _, id := range combo {
		total += free[id]
		groups += free[id] / groupSize
	}
	share := (a.needed / len(combo) / groupSize) * groupSize
	if total < a.needed || groups*groupSize < a.needed {
		return 0, nil, false
	}
	var candidates []int
	for _, id := range combo {
		if free[id] < share {
			return 0, nil, false
		}
		free[id] -= share
		if free[id] >= groupSize {
			candidates = append(candidates, id)
		}
	}
	remainder := a.needed - share*len(combo)
	if remainder == 0 {
		return standardDeviation(free), nil, true
	}
	balance = math.MaxFloat64
	for size := len(candidates); size >= 1; size-- {
		combinations(candidates, size, func(subset []int) bool {
			after, placed := placeRemainder(free, subset, remainder, groupSize)
			if placed {
				if b := standardDeviation(after); b < balance {
					balance, remainderNodes = b, slices.Clone(subset)
				}
			}
			return true
		})
	}
	return balance, remainderNodes, remainderNodes != nil
}

// placeRemainder deals remainder CPUs round-robin in groups over subset; placed is false when
// the subset runs out of whole groups first.
func placeRemainder(free map[int]int, subset []int, remainder, groupSize int) (after map[int]int, placed bool) {
	after = make(map[int]int, len(free))
	for id, n := range free {
		after[id] = n
	}
	for remainder > 0 {
		progressed := false
		for _, id := range subset {
			if remainder == 0 || after[id] < groupSize {
				continue
			}
			after[id] -= groupSize
			remainder -= groupSize
			progressed = true
		}
		if !progressed {
			return nil, false
		}
	}
	return after, true
}

// takeSpread takes an even share from every node of combo, then the remainder group by group
// from remainderNodes.
func (a *accumulator) takeSpread(combo, remainderNodes []int, groupSize int) {
	share := (a.needed / len(combo) / groupSize) * groupSize
	remainder := a.needed - share*len(combo)
	for _, id := range combo {
		cpus, _ := takePacked(a.machine, a.free.in(numaOf, id), share)
		a.take(cpus)
	}
	for remainder > 0 {
		progressed := false
		for _, id := range remainderNodes {
			if remainder == 0 || a.free.in(numaOf, id).Size() < groupSize {
				continue
			}
			cpus, _ := takePacked(a.machine, a.free.in(numaOf, id), groupSize)
			a.take(cpus)
			remainder -= groupSize
			progressed = true
		}
		if !progressed {
			return
		}
	}
}

// combinations calls f with every k-element subset of ids, in order, until f returns false.
func combinations(ids []int, k int, f func([]int) bool) {
	if k < 1 || k > len(ids) {
		return
	}
	var walk func(start int, picked []int) bool
	walk = func(start int, picked []int) bool {
		if len(picked) == k {
			return f(picked)
		}
		for i := start; i <= len(ids)-(k-len(picked)); i++ {
			if !walk(i+1, append(picked, ids[i])) {
				return false
			}
		}
		return true
	}
	walk(0, make([]int, 0, k))
}

// standardDeviation of the free CPU counts, rounded to thousandths as upstream's score is, so
// ties break the same way.
func standardDeviation(free map[int]int) float64 {
	var sum float64
	for _, n := range free {
		sum += float64(n)
	}
	mean := math.Round(sum/float64(len(free))*1000) / 1000
	var sq float64
	for _, n := range free {
		sq += (float64(n) - mean) * (float64(n) - mean)
	}
	return math.Round(math.Sqrt(sq/float64(len(free)))*1000) / 1000
}
