package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"
)

// fakeSysfs writes the sysfs files Read reads for machine m, as Linux lays them out.
func fakeSysfs(t *testing.T, m *Machine) string {
	t.Helper()
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("devices/system/cpu/online", m.CPUSet().String())
	for _, c := range m.CPUs {
		var siblings []int
		for _, o := range m.CPUs {
			if o.Core == c.Core {
				siblings = append(siblings, o.ID)
			}
		}
		dir := fmt.Sprintf("devices/system/cpu/cpu%d/topology/", c.ID)
		write(dir+"physical_package_id", strconv.Itoa(c.Socket))
		write(dir+"thread_siblings_list", cpuset.New(siblings...).String())
		write(dir+"core_id", strconv.Itoa(c.Core%4)) // per-socket numbering: Read must not use it
	}
	for _, n := range m.NUMANodes {
		dir := fmt.Sprintf("devices/system/node/node%d/", n.ID)
		write(dir+"cpulist", n.CPUs.String())
		write(dir+"meminfo", fmt.Sprintf("Node %d MemTotal:       %d kB\nNode %d MemFree:        1024 kB", n.ID, n.MemoryBytes/1024, n.ID))
		var row []string
		for _, o := range m.NUMANodeIDs() {
			row = append(row, strconv.Itoa(n.Distances[o]))
		}
		write(dir+"distance", strings.Join(row, " "))
	}
	write("devices/system/node/online", "0")
	write("devices/system/node/possible", "0")
	for _, n := range m.NUMANodes {
		for name, bytes := range n.HugePages {
			size := resource.MustParse(strings.TrimPrefix(string(name), v1.ResourceHugePagesPrefix))
			dir := fmt.Sprintf("devices/system/node/node%d/hugepages/hugepages-%dkB/", n.ID, size.Value()/1024)
			write(dir+"nr_hugepages", strconv.FormatUint(bytes/uint64(size.Value()), 10))
		}
	}
	var total uint64
	for _, n := range m.NUMANodes {
		total += n.MemoryBytes
	}
	write("meminfo", fmt.Sprintf("MemTotal:       %d kB\nMemFree:        1024 kB", total/1024))
	return root
}

// read reads the fake machine under root.
func read(root string) (*Machine, error) {
	return Read(root, filepath.Join(root, "meminfo"))
}

// withHugePages gives node 0 of m huge page pools: 4 pages of 2Mi, none of 1Gi.
func withHugePages(m *Machine) *Machine {
	m.NUMANodes[0].HugePages = map[v1.ResourceName]uint64{"hugepages-2Mi": 4 << 21, "hugepages-1Gi": 0}
	return m
}

func TestReadSyntheticMachines(t *testing.T) {
	for _, m := range []*Machine{
		Synthetic(1, 1, 2, 1, 8<<30),  // this kind of VM: 2 CPUs, one node
		Synthetic(1, 1, 4, 2, 16<<30), // hyperthreads
		Synthetic(2, 1, 2, 2, 4<<30),  // 2 sockets, 2 NUMA nodes
		withHugePages(Synthetic(2, 1, 2, 1, 4<<30)),
		Synthetic(1, 3, 2, 2, 4<<30),  // 3 NUMA nodes on one socket
		Synthetic(2, 2, 4, 2, 32<<30), // 4 NUMA nodes, 32 CPUs
	} {
		name := fmt.Sprintf("%d CPUs on %d NUMA nodes", len(m.CPUs), len(m.NUMANodes))
		got, err := read(fakeSysfs(t, m))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%s: read\n%+v\nwant\n%+v", name, got, m)
		}
	}
}

func TestReadSkipsOfflineCPUs(t *testing.T) {
	m := Synthetic(2, 1, 2, 2, 1<<30) // node 0: 0,1,4,5; node 1: 2,3,6,7; core k's siblings k, k+4
	root := fakeSysfs(t, m)
	// CPU 0 goes offline: its sibling 4 names the core now, and node 0 lists only what is online.
	if err := os.WriteFile(filepath.Join(root, "devices/system/cpu/online"), []byte("1-7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := read(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.CPUs) != 7 || got.CPUs[0].ID != 1 {
		t.Fatalf("CPUs %+v, want 1-7", got.CPUs)
	}
	for _, c := range got.CPUs {
		if c.ID == 4 && c.Core != 4 {
			t.Errorf("CPU 4 on core %d, want 4 (its lowest online sibling)", c.Core)
		}
	}
	if want := cpuset.New(1, 4, 5); !got.NUMANodes[0].CPUs.Equals(want) {
		t.Errorf("node 0 CPUs %s, want %s", got.NUMANodes[0].CPUs, want)
	}
}

func TestReadWithoutNUMA(t *testing.T) {
	m := Synthetic(1, 1, 2, 2, 8<<30)
	root := fakeSysfs(t, m)
	if err := os.RemoveAll(filepath.Join(root, "devices/system/node")); err != nil {
		t.Fatal(err)
	}
	got, err := read(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.NUMANodes) != 1 || !got.NUMANodes[0].CPUs.Equals(m.CPUSet()) || got.NUMANodes[0].Distances[0] != 10 || got.NUMANodes[0].MemoryBytes != 8<<30 {
		t.Errorf("nodes %+v, want one node 0 with every CPU and the machine's 8Gi", got.NUMANodes)
	}
}

func TestReadMemoryOnlyNode(t *testing.T) {
	m := Synthetic(1, 2, 2, 1, 1<<30)
	m.NUMANodes[1].CPUs = cpuset.New()
	for i := range m.CPUs {
		m.CPUs[i].NUMANode = 0
	}
	m.NUMANodes[0].CPUs = m.CPUSet()
	got, err := read(fakeSysfs(t, m))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("read\n%+v\nwant\n%+v", got, m)
	}
}

func TestReadRefusesBrokenFiles(t *testing.T) {
	cases := map[string]func(root string) error{
		"online": func(root string) error { return os.Remove(filepath.Join(root, "devices/system/cpu/online")) },
		"distance": func(root string) error {
			return os.WriteFile(filepath.Join(root, "devices/system/node/node0/distance"), []byte("10\n"), 0o644)
		},
		"meminfo": func(root string) error {
			return os.WriteFile(filepath.Join(root, "devices/system/node/node1/meminfo"), []byte("nothing\n"), 0o644)
		},
		"nr_hugepages": func(root string) error {
			return os.WriteFile(filepath.Join(root, "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"), []byte("many\n"), 0o644)
		},
		"physical_package_id": func(root string) error {
			return os.WriteFile(filepath.Join(root, "devices/system/cpu/cpu1/topology/physical_package_id"), []byte("x\n"), 0o644)
		},
	}
	for name, breakIt := range cases {
		root := fakeSysfs(t, withHugePages(Synthetic(1, 2, 1, 1, 1<<30)))
		if err := breakIt(root); err != nil {
			t.Fatal(err)
		}
		if _, err := read(root); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("broken %s: err %v, want one naming it", name, err)
		}
	}
}

func TestMemTotalOfTheMachineAndOfANode(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]uint64{
		"MemTotal:        8048560 kB\nMemFree:         1000 kB\n":       8048560 << 10,
		"Node 1 MemTotal:       1024 kB\nNode 1 MemFree:  8758240 kB\n": 1 << 20,
	} {
		path := filepath.Join(dir, "meminfo")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := MemTotal(path); err != nil || got != want {
			t.Errorf("MemTotal of %q = %d, %v; want %d", content, got, err, want)
		}
	}
}

func TestHugePagesWithoutPoolsIsNil(t *testing.T) {
	if got, err := HugePages(filepath.Join(t.TempDir(), "hugepages")); got != nil || err != nil {
		t.Errorf("HugePages of a missing directory = %v, %v; want nil, nil", got, err)
	}
}
