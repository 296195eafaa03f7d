package cpumanager

import (
	"slices"

	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// layout is a set of CPUs with where each sits (core, socket, NUMA node): the whole machine,
// or the part of it still free during one allocation.
type layout map[int]topology.CPU

func newLayout(m *topology.Machine) layout {
	l := make(layout, len(m.CPUs))
	for _, c := range m.CPUs {
		l[c.ID] = c
	}
	return l
}

// keepOnly returns the part of l whose CPUs are in s.
func (l layout) keepOnly(s cpuset.CPUSet) layout {
	out := make(layout, s.Size())
	for id, c := range l {
		if s.Contains(id) {
			out[id] = c
		}
	}
	return out
}

func (l layout) cpus() cpuset.CPUSet {
	return l.where(func(topology.CPU) bool { return true })
}

func (l layout) where(keep func(topology.CPU) bool) cpuset.CPUSet {
	ids := make([]int, 0, len(l))
	for id, c := range l {
		if keep(c) {
			ids = append(ids, id)
		}
	}
	return cpuset.New(ids...)
}

// The three levels CPUs are grouped by.
func numaOf(c topology.CPU) int   { return c.NUMANode }
func socketOf(c topology.CPU) int { return c.Socket }
func coreOf(c topology.CPU) int   { return c.Core }

// in returns l's CPUs whose level (numaOf, socketOf, coreOf) is one of ids.
func (l layout) in(level func(topology.CPU) int, ids ...int) cpuset.CPUSet {
	return l.where(func(c topology.CPU) bool { return slices.Contains(ids, level(c)) })
}

// ids returns the distinct IDs at level among l's CPUs that also match within, ascending.
func (l layout) ids(level func(topology.CPU) int, within func(topology.CPU) bool) []int {
	seen := map[int]bool{}
	var out []int
	for _, c := range l {
		if (within == nil || within(c)) && !seen[level(c)] {
			seen[level(c)] = true
			out = append(out, level(c))
		}
	}
	slices.Sort(out)
	return out
}

// under says whether a CPU sits in unit id of level; for ids(level, under(parent, id)).
func under(level func(topology.CPU) int, id int) func(topology.CPU) bool {
	return func(c topology.CPU) bool { return level(c) == id }
}

// cpusPerCore is the most hyperthreads any core of l has (1 without SMT).
func (l layout) cpusPerCore() int {
	count := map[int]int{}
	most := 0
	for _, c := range l {
		count[c.Core]++
		most = max(most, count[c.Core])
	}
	return most
}
