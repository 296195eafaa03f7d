package cpumanager

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// accumulator gathers the CPUs of one allocation, claiming whole units of the machine first
// (NUMA nodes or sockets, then cores) and single CPUs last, so an allocation fragments the
// machine as little as it can. The order is upstream's, so the same request on the same
// machine gets the same CPUs under nodelet as under the kubelet.
type accumulator struct {
	machine layout // every CPU of the machine, never changed
	free    layout // the CPUs this allocation may still take
	needed  int
	result  cpuset.CPUSet
	// upper and lower are the two levels above cores, outermost first: NUMA nodes then
	// sockets when a NUMA node holds one socket or more, else sockets then NUMA nodes.
	upper, lower func(topology.CPU) int
	numaFirst    bool // upper is NUMA nodes
}

func newAccumulator(machine layout, available cpuset.CPUSet, n int) *accumulator {
	a := &accumulator{machine: machine, free: machine.keepOnly(available), needed: n, result: cpuset.New(),
		upper: numaOf, lower: socketOf, numaFirst: true}
	if len(machine.ids(socketOf, nil)) < len(machine.ids(numaOf, nil)) {
		a.upper, a.lower, a.numaFirst = socketOf, numaOf, false
	}
	return a
}

func (a *accumulator) take(s cpuset.CPUSet) {
	a.result = a.result.Union(s)
	a.free = a.free.keepOnly(a.free.cpus().Difference(s))
	a.needed -= s.Size()
}

func (a *accumulator) satisfied() bool { return a.needed < 1 }

// sortByFree orders unit IDs of level by how many free CPUs each holds, fewest first (so
// partly used units fill up before untouched ones are broken into), then by ID.
func (a *accumulator) sortByFree(ids []int, level func(topology.CPU) int) {
	slices.SortStableFunc(ids, func(x, y int) int {
		return cmp.Or(cmp.Compare(a.free.in(level, x).Size(), a.free.in(level, y).Size()), cmp.Compare(x, y))
	})
}

// sortedUpper returns the upper-level units with a free CPU, in taking order.
func (a *accumulator) sortedUpper() []int {
	ids := a.free.ids(a.upper, nil)
	a.sortByFree(ids, a.upper)
	return ids
}

// sortedWithin returns the units of level with a free CPU, sorted inside each unit of the
// parent order in turn.
func (a *accumulator) sortedWithin(parents []int, parent, level func(topology.CPU) int) []int {
	var out []int
	for _, p := range parents {
		ids := a.free.ids(level, under(parent, p))
		a.sortByFree(ids, level)
		for _, id := range ids {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

func (a *accumulator) sortedLower() []int {
	return a.sortedWithin(a.sortedUpper(), a.upper, a.lower)
}

func (a *accumulator) sortedCores() []int {
	return a.sortedWithin(a.sortedLower(), a.lower, coreOf)
}

// sortedNUMANodes returns the NUMA nodes with a free CPU in taking order.
func (a *accumulator) sortedNUMANodes() []int {
	if a.numaFirst {
		return a.sortedUpper()
	}
	return a.sortedLower()
}

// takeWhole takes each of ids (units of level) whose CPUs are all free, while the request
// still needs at least a whole unit.
func (a *accumulator) takeWhole(level func(topology.CPU) int, ids []int) {
	for _, id := range ids {
		unit := a.machine.in(level, id)
		if a.free.in(level, id).Size() != unit.Size() || a.needed < unit.Size() {
			continue
		}
		a.take(unit)
	}
}

// takeRemaining takes single CPUs, those of the fullest cores first.
func (a *accumulator) takeRemaining() {
	for _, core := range a.sortedCores() {
		for _, id := range a.free.in(coreOf, core).List() {
			a.take(cpuset.New(id))
			if a.satisfied() {
				return
			}
		}
	}
}

// takePacked returns n CPUs of available, packed onto as few NUMA nodes, sockets and cores as
// it can (upstream's default, NUMA-packed, choice).
func takePacked(machine layout, available cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	a := newAccumulator(machine, available, n)
	if a.satisfied() {
		return a.result, nil
	}
	if a.needed > len(a.free) {
		return cpuset.New(), fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, available.Size())
	}
	a.takeWhole(a.upper, a.sortedUpper())
	if !a.satisfied() {
		a.takeWhole(a.lower, a.sortedLower())
	}
	if !a.satisfied() {
		a.takeWhole(coreOf, a.sortedCores())
	}
	if !a.satisfied() {
		a.takeRemaining()
	}
	if !a.satisfied() {
		return cpuset.New(), fmt.Errorf("failed to allocate cpus")
	}
	return a.result, nil
}
