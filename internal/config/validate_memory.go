package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// checkReservedMemory checks each reservedMemory entry as upstream does: memory or huge pages
// only, never zero, one amount per NUMA node and kind. Whether they add up to what node
// allocatable reserves, and name NUMA nodes that exist, the memory manager checks at start.
func (v *validator) checkReservedMemory(kc *kubeletconfigv1beta1.KubeletConfiguration) {
	seen := map[int32]map[corev1.ResourceName]bool{}
	for i, r := range kc.ReservedMemory {
		field := fmt.Sprintf("reservedMemory[%d]", i)
		if seen[r.NumaNode] == nil {
			seen[r.NumaNode] = map[corev1.ResourceName]bool{}
		}
		names := slices.Sorted(maps.Keys(r.Limits))
		for _, name := range names {
			q := r.Limits[name]
			if name != corev1.ResourceMemory && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				v.add(field, "the limit type %q for NUMA node %d is not supported, only [memory hugepages-<HugePageSize>] is accepted", name, r.NumaNode)
			}
			if q.IsZero() {
				v.add(field, "reserved memory may not be zero for NUMA node %d and resource %q", r.NumaNode, name)
			}
			if q.Sign() < 0 {
				v.add(field, "reserved memory may not be negative for NUMA node %d and resource %q, got %s", r.NumaNode, name, q.String())
			}
			if seen[r.NumaNode][name] {
				v.add(field, "the reserved memory has a duplicate value for NUMA node %d and resource %q", r.NumaNode, name)
			}
			seen[r.NumaNode][name] = true
		}
	}
}
