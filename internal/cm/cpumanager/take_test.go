package cpumanager

import (
	"strings"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/host/topology"
)

func TestTakePacked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		machine   *topology.Machine
		available string // "" means every CPU
		n         int
		want      string
	}{
		{"2 CPUs, 1 reserved: the lowest core", topology.Synthetic(1, 1, 2, 1, 0), "", 1, "0"},
		{"8 CPUs with HT, 2 reserved: one whole core", topology.Synthetic(1, 1, 4, 2, 0), "", 2, "0,4"},
		{"8 CPUs with HT, 3: a core, then the next core's first thread", topology.Synthetic(1, 1, 4, 2, 0), "", 3, "0-1,4"},
		{"a single thread fills a half-used core first", topology.Synthetic(1, 1, 4, 2, 0), "1-7", 1, "4"},
		{"whole socket when the request is a socket", topology.Synthetic(2, 1, 4, 2, 0), "", 8, "0-3,8-11"},
		{"the fuller socket first", topology.Synthetic(2, 1, 4, 2, 0), "1-3,4-7,9-11,12-15", 2, "1,9"},
		{"whole NUMA node of a socket split in two", topology.Synthetic(1, 2, 2, 2, 0), "", 4, "0-1,4-5"},
		{"64 CPUs, 4 NUMA nodes: a whole node", topology.Synthetic(2, 2, 8, 2, 0), "", 16, "0-7,32-39"},
		{"nothing asked", topology.Synthetic(1, 1, 2, 1, 0), "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(tc.machine)
			avail := l.cpus()
			if tc.available != "" {
				avail, _ = cpuset.Parse(tc.available)
			}
			got, err := takePacked(l, avail, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("took %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTakePackedNotEnough(t *testing.T) {
	l := newLayout(topology.Synthetic(1, 1, 2, 1, 0))
	_, err := takePacked(l, cpuset.New(1), 2)
	if err == nil || err.Error() != "not enough cpus available to satisfy request: requested=2, available=1" {
		t.Fatalf("err = %v", err)
	}
}

func TestTakeDistributed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		machine   *topology.Machine
		n, group  int
		want      string
		wantNodes int
	}{
		{"fits one node: packed there", topology.Synthetic(1, 2, 4, 1, 0), 4, 1, "0-3", 1},
		{"two nodes: three from each", topology.Synthetic(1, 2, 4, 1, 0), 6, 1, "0-2,4-6", 2},
		{"four nodes, whole cores: the fewest nodes that can", topology.Synthetic(2, 2, 2, 2, 0), 8, 2, "0-3,8-11", 2},
		{"four nodes, 12 CPUs: an even share from three", topology.Synthetic(2, 2, 2, 2, 0), 12, 2, "0-5,8-13", 3},
		{"odd request falls back to packing", topology.Synthetic(1, 2, 4, 2, 0), 3, 2, "0-1,8", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(tc.machine)
			got, err := takeDistributed(l, l.cpus(), tc.n, tc.group)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("took %q, want %q", got, tc.want)
			}
			if nodes := len(l.keepOnly(got).ids(numaOf, nil)); nodes != tc.wantNodes {
				t.Errorf("spread over %d NUMA nodes, want %d", nodes, tc.wantNodes)
			}
		})
	}
}

func TestTakeDistributedNeverHangs(t *testing.T) {
	// Odd free counts with whole-core groups: no subset can take the remainder.
	l := newLayout(topology.Synthetic(1, 4, 2, 2, 0))
	avail := l.cpus().Difference(cpuset.New(0, 2, 4, 6)) // one thread gone from a core of each node
	got, err := takeDistributed(l, avail, 6, 2)
	if err != nil && !strings.Contains(err.Error(), "cpus") {
		t.Fatal(err)
	}
	if err == nil && got.Size() != 6 {
		t.Fatalf("took %s", got)
	}
}

func TestCombinations(t *testing.T) {
	var got []string
	combinations([]int{0, 1, 2}, 2, func(c []int) bool {
		got = append(got, cpuset.New(c...).String())
		return true
	})
	if strings.Join(got, " ") != "0-1 0,2 1-2" {
		t.Fatalf("combinations = %v", got)
	}
}
