package runtime

import (
	"fmt"
	"strings"

	"github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hugePageSizes are the machine's huge page sizes as cgroups name them ("2MB", "1GB"); a
// variable so tests can give a machine of their own.
var hugePageSizes = cgroups.HugePageSizes

// hugepageLimits limits the container to the huge pages it asks for: every page size the
// machine has is limited, to 0 unless the container's hugepages-<size> limit says otherwise,
// as upstream, so a container that asks for none can take none.
func hugepageLimits(c *v1.Container) []*runtimeapi.HugepageLimit {
	wanted := map[string]uint64{}
	for name, q := range c.Resources.Limits {
		size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		pageSize, err := resource.ParseQuantity(size)
		if err != nil {
			continue // the API server refuses such a name
		}
		wanted[cgroupPageSize(pageSize.Value())] = uint64(q.Value())
	}
	var out []*runtimeapi.HugepageLimit
	for _, size := range hugePageSizes() {
		out = append(out, &runtimeapi.HugepageLimit{PageSize: size, Limit: wanted[size]})
	}
	return out
}

// cgroupPageSize names a page size of n bytes as the hugetlb cgroup files do: 2097152 → "2MB".
func cgroupPageSize(n int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for n >= 1024 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", n, units[i])
}
