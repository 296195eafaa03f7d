package topology

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

var nodeDirName = regexp.MustCompile(`^node([0-9]+)$`)

// maxNUMANodeID is the highest NUMA node ID a Mask holds.
const maxNUMANodeID = 63

// Read reads the machine's online CPUs and its NUMA nodes (with their memory and huge pages)
// from sysfs (normally "/sys"), as cAdvisor does for the upstream kubelet. A CPU's core is named
// by its lowest online hyperthread sibling, which makes core IDs unique across sockets. A kernel
// without NUMA support (no devices/system/node) gives one node 0 holding every CPU and the
// machine's memory, the MemTotal of procMeminfo (normally "/proc/meminfo").
func Read(sysfsRoot, procMeminfo string) (*Machine, error) {
	cpuDir := filepath.Join(sysfsRoot, "devices", "system", "cpu")
	online, err := readCPUList(filepath.Join(cpuDir, "online"))
	if err != nil {
		return nil, err
	}
	if online.IsEmpty() {
		return nil, fmt.Errorf("%s lists no online CPU", filepath.Join(cpuDir, "online"))
	}
	nodes, err := readNUMANodes(filepath.Join(sysfsRoot, "devices", "system", "node"), online, procMeminfo)
	if err != nil {
		return nil, err
	}
	nodeOf := map[int]int{}
	for _, n := range nodes {
		for _, id := range n.CPUs.List() {
			nodeOf[id] = n.ID
		}
	}
	m := &Machine{NUMANodes: nodes}
	for _, id := range online.List() {
		c, err := readCPU(filepath.Join(cpuDir, "cpu"+strconv.Itoa(id), "topology"), id, online)
		if err != nil {
			return nil, err
		}
		c.NUMANode = nodeOf[id]
		m.CPUs = append(m.CPUs, c)
	}
	return m, nil
}

// readCPU reads one CPU's socket and core.
func readCPU(dir string, id int, online cpuset.CPUSet) (CPU, error) {
	socket, err := readInt(filepath.Join(dir, "physical_package_id"))
	if err != nil {
		return CPU{}, err
	}
	siblings, err := readCPUList(filepath.Join(dir, "thread_siblings_list"))
	if err != nil {
		return CPU{}, err
	}
	core := id
	if s := siblings.Intersection(online); !s.IsEmpty() {
		core = s.List()[0]
	}
	return CPU{ID: id, Core: core, Socket: socket}, nil
}

// readNUMANodes reads every node directory: its CPUs (online ones only), memory, huge pages
// and distances.
func readNUMANodes(dir string, online cpuset.CPUSet, procMeminfo string) ([]NUMANode, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		mem, err := MemTotal(procMeminfo)
		if err != nil {
			return nil, err
		}
		return []NUMANode{{ID: 0, CPUs: online, MemoryBytes: mem, Distances: map[int]int{0: 10}}}, nil
	}
	if err != nil {
		return nil, err
	}
	var nodes []NUMANode
	for _, e := range entries {
		match := nodeDirName.FindStringSubmatch(e.Name())
		if match == nil {
			continue
		}
		id, _ := strconv.Atoi(match[1])
		if id > maxNUMANodeID {
			return nil, fmt.Errorf("%s: NUMA node IDs above %d do not fit a Mask", filepath.Join(dir, e.Name()), maxNUMANodeID)
		}
		n, err := readNUMANode(filepath.Join(dir, e.Name()), id, online)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s holds no NUMA node", dir)
	}
	slices.SortFunc(nodes, func(a, b NUMANode) int { return a.ID - b.ID })
	ids := make([]int, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	for i := range nodes {
		if err := readDistances(filepath.Join(dir, "node"+strconv.Itoa(nodes[i].ID), "distance"), &nodes[i], ids); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

func readNUMANode(dir string, id int, online cpuset.CPUSet) (NUMANode, error) {
	cpus, err := readCPUList(filepath.Join(dir, "cpulist"))
	if err != nil {
		return NUMANode{}, err
	}
	mem, err := MemTotal(filepath.Join(dir, "meminfo"))
	if err != nil {
		return NUMANode{}, err
	}
	huge, err := HugePages(filepath.Join(dir, "hugepages"))
	if err != nil {
		return NUMANode{}, fmt.Errorf("NUMA node %d: %w", id, err)
	}
	return NUMANode{ID: id, CPUs: cpus.Intersection(online), MemoryBytes: mem, HugePages: huge}, nil
}

// readDistances reads a node's distance row, one number per node in node ID order.
func readDistances(path string, n *NUMANode, ids []int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fields := strings.Fields(string(data))
	if len(fields) != len(ids) {
		return fmt.Errorf("%s: %d distances for %d NUMA nodes", path, len(fields), len(ids))
	}
	n.Distances = make(map[int]int, len(ids))
	for i, f := range fields {
		d, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		n.Distances[ids[i]] = d
	}
	return nil
}

func readCPUList(path string) (cpuset.CPUSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return cpuset.CPUSet{}, err
	}
	s, err := cpuset.Parse(strings.TrimSpace(string(data)))
	if err != nil {
		return cpuset.CPUSet{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func readInt(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
