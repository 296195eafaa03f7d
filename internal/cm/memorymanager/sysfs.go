package memorymanager

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ReadNodes reads each NUMA node's memory and pre-allocated huge pages from sysfs (sysRoot is
// normally /sys), as upstream reads them through cAdvisor: the node's MemTotal, and for each
// page size the node offers, pages × size (a size with no pages is listed with 0). A machine
// without NUMA nodes in sysfs is one node 0 with the memory of procMeminfo (/proc/meminfo).
func ReadNodes(sysRoot, procMeminfo string) ([]NUMAMemory, error) {
	dir := filepath.Join(sysRoot, "devices", "system", "node")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading NUMA nodes: %w", err)
	}
	var nodes []NUMAMemory
	for _, e := range entries {
		id, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "node"))
		if !strings.HasPrefix(e.Name(), "node") || err != nil {
			continue
		}
		n, err := readNode(filepath.Join(dir, e.Name()), id)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		total, err := memTotal(procMeminfo, "MemTotal:")
		if err != nil {
			return nil, err
		}
		nodes = []NUMAMemory{{ID: 0, Memory: total}}
	}
	slices.SortFunc(nodes, func(a, b NUMAMemory) int { return a.ID - b.ID })
	return nodes, nil
}

func readNode(dir string, id int) (NUMAMemory, error) {
	total, err := memTotal(filepath.Join(dir, "meminfo"), "MemTotal:")
	if err != nil {
		return NUMAMemory{}, err
	}
	n := NUMAMemory{ID: id, Memory: total, HugePages: map[v1.ResourceName]uint64{}}
	sizes, err := os.ReadDir(filepath.Join(dir, "hugepages"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return NUMAMemory{}, fmt.Errorf("reading huge pages of NUMA node %d: %w", id, err)
	}
	for _, s := range sizes {
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(s.Name(), "hugepages-"), "kB"), 10, 64)
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "hugepages", s.Name(), "nr_hugepages"))
		if err != nil {
			return NUMAMemory{}, fmt.Errorf("reading huge pages of NUMA node %d: %w", id, err)
		}
		pages, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			return NUMAMemory{}, fmt.Errorf("NUMA node %d %s/nr_hugepages: %w", id, s.Name(), err)
		}
		size := resource.NewQuantity(int64(kb*1024), resource.BinarySI)
		n.HugePages[v1.ResourceName(v1.ResourceHugePagesPrefix+size.String())] = pages * kb * 1024
	}
	return n, nil
}

// memTotal reads the kB figure after key ("MemTotal:") in a meminfo file, in bytes. A node's
// meminfo prefixes each line with "Node <id> ".
func memTotal(path, key string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("reading memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i := 0; i+1 < len(fields); i++ {
			if fields[i] == key {
				kb, err := strconv.ParseUint(fields[i+1], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s: %s: %w", path, key, err)
				}
				return kb * 1024, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return 0, fmt.Errorf("%s has no %s", path, key)
}
