package kuberuntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/host/hugepages"
)

// The container's CRI hugetlb limits are its hugepages-<size> limits, every page size of the
// machine limited.
func TestHugepageLimits(t *testing.T) {
	defer func(old func() []string) { hugepages.Sizes = old }(hugepages.Sizes)
	hugepages.Sizes = func() []string { return []string{"1GB", "2MB"} }
	c := v1.Container{Name: "c", Resources: resources(nil, map[v1.ResourceName]string{"memory": "128Mi", "hugepages-2Mi": "8Mi"})}
	got := hugepageLimits(&c)
	if len(got) != 2 || got[0].PageSize != "1GB" || got[0].Limit != 0 || got[1].PageSize != "2MB" || got[1].Limit != 8<<20 {
		t.Errorf("limits %v, want 1GB=0 and 2MB=8Mi", got)
	}
}
