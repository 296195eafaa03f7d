package downward

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestResourceValueHugePages(t *testing.T) {
	c := &v1.Container{Name: "app", Resources: v1.ResourceRequirements{
		Limits:   v1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Requests: v1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")},
	}}
	f := Fields{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{*c}}},
		Capacity: Capacity{MilliCPU: 2000, MemoryBytes: 4 << 30}}
	cases := []struct {
		resource, divisor, want string
	}{
		{"limits.hugepages-2Mi", "", "4194304"},
		{"requests.hugepages-2Mi", "1Mi", "4"},
		{"limits.hugepages-2Mi", "3Mi", "2"}, // rounded up
		{"limits.hugepages-1Gi", "", "0"},    // unset: 0, not the node's capacity
		{"limits.memory", "1Mi", "64"},
		{"limits.cpu", "", "2"}, // unset: the node's capacity
	}
	for _, tc := range cases {
		ref := &v1.ResourceFieldSelector{Resource: tc.resource}
		if tc.divisor != "" {
			ref.Divisor = resource.MustParse(tc.divisor)
		}
		got, err := f.ResourceValue(ref, c)
		if err != nil || got != tc.want {
			t.Errorf("%s / %q = %q, %v; want %q", tc.resource, tc.divisor, got, err, tc.want)
		}
	}
	if _, err := f.ResourceValue(&v1.ResourceFieldSelector{Resource: "limits.nvidia.com/gpu"}, c); err == nil {
		t.Error("an extended resource resolved; want the unsupported error")
	}
}
