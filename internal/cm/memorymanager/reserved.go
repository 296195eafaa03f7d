package memorymanager

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// reservedPerNode reads reservedMemory for the Static policy, checked as upstream checks it:
// every NUMA node it names exists, and for memory and each huge page size its amounts over all
// nodes add up to exactly what node allocatable holds back (kube and system reserved plus the
// hard eviction threshold), so the NUMA nodes' allocatable memory adds up to the node's. Some
// memory must be reserved.
func reservedPerNode(nodes []NUMAMemory, reservations []kubeletconfigv1beta1.MemoryReservation, nodeReservation v1.ResourceList) (map[int]map[v1.ResourceName]uint64, error) {
	exists := map[int]bool{}
	out := map[int]map[v1.ResourceName]uint64{}
	for _, n := range nodes {
		exists[n.ID] = true
		out[n.ID] = map[v1.ResourceName]uint64{}
	}
	totals := map[v1.ResourceName]*resource.Quantity{}
	for _, r := range reservations {
		if !exists[int(r.NumaNode)] {
			return nil, fmt.Errorf("reservedMemory: the reserved memory configuration references a NUMA node %d that does not exist on this machine", r.NumaNode)
		}
		for name, q := range r.Limits {
			if totals[name] == nil {
				totals[name] = resource.NewQuantity(0, resource.BinarySI)
			}
			totals[name].Add(q)
			bytes, ok := q.AsInt64()
			if !ok || bytes < 0 {
				return nil, fmt.Errorf("reservedMemory: NUMA node %d %s: %s is not a whole number of bytes", r.NumaNode, name, q.String())
			}
			out[int(r.NumaNode)][name] = uint64(bytes)
		}
	}
	kinds := map[v1.ResourceName]uint64{}
	for name := range totals {
		kinds[name] = 0
	}
	for name := range nodeReservation {
		if isMemoryKind(name) {
			kinds[name] = 0
		}
	}
	for _, name := range sortedNames(kinds) {
		want, got := resource.NewQuantity(0, resource.BinarySI), resource.NewQuantity(0, resource.BinarySI)
		if q, ok := nodeReservation[name]; ok {
			want.Add(q)
		}
		if totals[name] != nil {
			got.Add(*totals[name])
		}
		if !got.Equal(*want) {
			return nil, fmt.Errorf("reservedMemory: the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature (kubeReserved + systemReserved + evictionHard)", got.String(), name, want.String())
		}
	}
	if totals[v1.ResourceMemory] == nil || totals[v1.ResourceMemory].Sign() <= 0 {
		return nil, fmt.Errorf("reservedMemory: [memorymanager] you should specify the system reserved memory (the Static policy needs some memory reserved)")
	}
	return out, nil
}
