package hugepages

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCgroupSize(t *testing.T) {
	for name, want := range map[v1.ResourceName]string{
		"hugepages-2Mi": "2MB", "hugepages-1Gi": "1GB", "hugepages-64Ki": "64KB", "hugepages-32Mi": "32MB", "hugepages-16Gi": "16GB",
	} {
		if got, ok := CgroupSize(name); !ok || got != want {
			t.Errorf("%s: %q %v, want %q", name, got, ok, want)
		}
	}
	for _, name := range []v1.ResourceName{"memory", "hugepages-", "hugepages-x"} {
		if got, ok := CgroupSize(name); ok {
			t.Errorf("%s named %q, want no page size", name, got)
		}
	}
}

// Every page size of the machine is limited: to what the list asks for, to 0 otherwise.
func TestLimits(t *testing.T) {
	defer func(old func() []string) { Sizes = old }(Sizes)
	Sizes = func() []string { return []string{"1GB", "2MB"} }
	list := v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi"), "hugepages-2Mi": resource.MustParse("8Mi")}
	if got, want := Limits(list), []Limit{{"1GB", 0}, {"2MB", 8 << 20}}; !slices.Equal(got, want) {
		t.Errorf("8Mi of 2Mi pages: %v, want %v", got, want)
	}
	if got, want := Limits(nil), []Limit{{"1GB", 0}, {"2MB", 0}}; !slices.Equal(got, want) {
		t.Errorf("no huge pages asked: %v, want %v", got, want)
	}
	Sizes = func() []string { return nil }
	if got := Limits(list); len(got) != 0 {
		t.Errorf("a machine without huge pages: %v, want none", got)
	}
}
