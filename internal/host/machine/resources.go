package machine

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Eviction signals whose hard thresholds are held back from allocatable.
const (
	signalMemoryAvailable = "memory.available"
	signalNodeFsAvailable = "nodefs.available"
)

// Capacity is what the machine has: CPUs, memory, pods, ephemeral storage and huge pages.
func Capacity(m *Machine, maxPods int32, rootFsBytes int64) v1.ResourceList {
	c := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(int64(m.CPUs)*1000, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(m.MemoryBytes, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}
	if rootFsBytes > 0 {
		c[v1.ResourceEphemeralStorage] = *resource.NewQuantity(rootFsBytes, resource.BinarySI)
	}
	for name, bytes := range m.HugePages {
		c[name] = *resource.NewQuantity(bytes, resource.BinarySI)
	}
	return c
}

// Reservation is what node allocatable holds back from capacity (upstream's node allocatable
// reservation): kube and system reserved plus the hard eviction thresholds for memory and the
// node filesystem. The memory manager's reservedMemory must add up to it.
func Reservation(capacity v1.ResourceList, kubeReserved, systemReserved, evictionHard map[string]string) (v1.ResourceList, error) {
	total := v1.ResourceList{}
	for _, reserved := range []map[string]string{kubeReserved, systemReserved} {
		for name, value := range reserved {
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return nil, fmt.Errorf("reserved %s=%q: %w", name, value, err)
			}
			add(total, v1.ResourceName(name), q)
		}
	}
	for signal, res := range map[string]v1.ResourceName{
		signalMemoryAvailable: v1.ResourceMemory,
		signalNodeFsAvailable: v1.ResourceEphemeralStorage,
	} {
		value, ok := evictionHard[signal]
		if !ok {
			continue
		}
		q, err := threshold(value, capacity[res])
		if err != nil {
			return nil, fmt.Errorf("evictionHard %s=%q: %w", signal, value, err)
		}
		add(total, res, q)
	}
	return total, nil
}

// threshold reads an eviction threshold: a quantity, or a percentage of capacity.
func threshold(value string, capacity resource.Quantity) (resource.Quantity, error) {
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p < 0 || p > 100 {
			return resource.Quantity{}, fmt.Errorf("bad percentage")
		}
		bytes := int64(math.Floor(float64(capacity.Value()) * p / 100))
		return *resource.NewQuantity(bytes, resource.BinarySI), nil
	}
	return resource.ParseQuantity(value)
}

// Allocatable is capacity minus the reservation, never below zero. Pre-allocated huge pages are
// not available as ordinary memory, so they come off memory too.
func Allocatable(capacity, reserved v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range capacity {
		value := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			value.Sub(r)
		}
		out[name] = nonNegative(value)
	}
	if mem, ok := out[v1.ResourceMemory]; ok {
		for name, q := range capacity {
			if strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
				mem.Sub(q)
			}
		}
		out[v1.ResourceMemory] = nonNegative(mem)
	}
	return out
}

func add(list v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
	if cur, ok := list[name]; ok {
		q.Add(cur)
	}
	list[name] = q
}

func nonNegative(q resource.Quantity) resource.Quantity {
	if q.Sign() < 0 {
		return *resource.NewQuantity(0, q.Format)
	}
	return q
}

// Reserved is what kube-reserved and system-reserved hold back together (the node
// allocatable enforced on the pods cgroup, which does not hold back eviction thresholds).
func Reserved(kubeReserved, systemReserved map[string]string) (v1.ResourceList, error) {
	return Reservation(nil, kubeReserved, systemReserved, nil)
}
