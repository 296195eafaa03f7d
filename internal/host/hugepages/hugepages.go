// Package hugepages names huge page sizes as Kubernetes (hugepages-2Mi) and the kernel's
// hugetlb cgroup ("2MB") do, and works out the hugetlb limits of a container's or a pod's
// cgroup as upstream sets them.
package hugepages

import (
	"fmt"
	"strings"

	"github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Sizes are the machine's huge page sizes as the hugetlb cgroup names them ("2MB", "1GB"); a
// variable so tests can give a machine of their own.
var Sizes = cgroups.HugePageSizes

// Limit is the most a cgroup may hold of one page size.
type Limit struct {
	PageSize string // as the hugetlb cgroup names it: "2MB"
	Bytes    uint64
}

// Limits are the hugetlb limits of a cgroup whose holder asks for what list holds: every page
// size of the machine is limited, to 0 unless list has its hugepages-<size>, so what asks for
// none can take none.
func Limits(list v1.ResourceList) []Limit {
	wanted := map[string]uint64{}
	for name, q := range list {
		if size, ok := CgroupSize(name); ok {
			wanted[size] = uint64(q.Value())
		}
	}
	var out []Limit
	for _, size := range Sizes() {
		out = append(out, Limit{PageSize: size, Bytes: wanted[size]})
	}
	return out
}

// CgroupSize names the page size of a hugepages-<size> resource as the hugetlb cgroup does
// (hugepages-2Mi → "2MB"); false for any other resource.
func CgroupSize(name v1.ResourceName) (string, bool) {
	size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
	if !ok {
		return "", false
	}
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return "", false // the API server refuses such a name
	}
	n := q.Value()
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for n >= 1024 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", n, units[i]), true
}
