package topology

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MemTotal reads the MemTotal figure of a meminfo file in bytes: the machine's /proc/meminfo
// ("MemTotal: X kB") or a NUMA node's, which prefixes each line with "Node <id>".
func MemTotal(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 4 && fields[0] == "Node" {
			fields = fields[2:]
		}
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: MemTotal: %w", path, err)
			}
			return kb * 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return 0, fmt.Errorf("%s has no MemTotal line", path)
}

// HugePages reads a directory of huge page pools, hugepages-<size>kB/nr_hugepages, as the
// machine's (/sys/kernel/mm/hugepages) and each NUMA node's are laid out: the bytes
// pre-allocated per page size, by resource name ("hugepages-2Mi"), a size with no pages
// listed with 0. A kernel without huge pages has no directory: nil.
func HugePages(dir string) (map[v1.ResourceName]uint64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading huge pages: %w", err)
	}
	pools := map[v1.ResourceName]uint64{}
	for _, e := range entries {
		sizeKB, ok := strings.CutSuffix(strings.TrimPrefix(e.Name(), "hugepages-"), "kB")
		kb, err := strconv.ParseUint(sizeKB, 10, 64)
		if !ok || err != nil {
			continue
		}
		path := filepath.Join(dir, e.Name(), "nr_hugepages")
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading huge pages: %w", err)
		}
		pages, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		size := resource.NewQuantity(int64(kb*1024), resource.BinarySI)
		pools[v1.ResourceName(v1.ResourceHugePagesPrefix+size.String())] = pages * kb * 1024
	}
	return pools, nil
}
