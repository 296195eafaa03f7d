package runtime

import (
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Every page size of the machine is limited: to what the container's hugepages-<size> limit
// says, to 0 otherwise.
func TestHugepageLimits(t *testing.T) {
	defer func(old func() []string) { hugePageSizes = old }(hugePageSizes)
	hugePageSizes = func() []string { return []string{"1GB", "2MB"} }
	limits := func(c v1.Container) []string {
		var out []string
		for _, l := range hugepageLimits(&c) {
			out = append(out, l.PageSize+"="+strconv.FormatUint(l.Limit, 10))
		}
		return out
	}
	none := v1.Container{Name: "c", Resources: resources(nil, map[v1.ResourceName]string{"cpu": "1", "memory": "128Mi"})}
	if got, want := limits(none), []string{"1GB=0", "2MB=0"}; !slices.Equal(got, want) {
		t.Errorf("no huge pages asked: limits %v, want %v", got, want)
	}
	some := v1.Container{Name: "c", Resources: resources(nil, map[v1.ResourceName]string{"memory": "128Mi", "hugepages-2Mi": "8Mi"})}
	if got, want := limits(some), []string{"1GB=0", "2MB=8388608"}; !slices.Equal(got, want) {
		t.Errorf("8Mi of 2Mi pages: limits %v, want %v", got, want)
	}
	hugePageSizes = func() []string { return nil }
	if got := hugepageLimits(&some); len(got) != 0 {
		t.Errorf("a machine without huge pages: limits %v, want none", got)
	}
}

func TestCgroupPageSize(t *testing.T) {
	for bytes, want := range map[int64]string{2 << 20: "2MB", 1 << 30: "1GB", 64 << 10: "64KB", 32 << 20: "32MB", 16 << 30: "16GB"} {
		if got := cgroupPageSize(bytes); got != want {
			t.Errorf("%d bytes: %q, want %q", bytes, got, want)
		}
	}
}
