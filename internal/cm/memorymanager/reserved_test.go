package memorymanager

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestReservedMemoryMustMatchNodeAllocatable(t *testing.T) {
	nodes := []NUMAMemory{{ID: 0, Memory: 8 * gi}, {ID: 1, Memory: 8 * gi}}
	reserve := func(node int32, amount string) kubeletconfigv1beta1.MemoryReservation {
		return kubeletconfigv1beta1.MemoryReservation{NumaNode: node, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(amount)}}
	}
	node := func(amount string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceMemory: resource.MustParse(amount), v1.ResourceCPU: resource.MustParse("1")}
	}
	for _, tc := range []struct {
		name     string
		reserved []kubeletconfigv1beta1.MemoryReservation
		node     v1.ResourceList
		wantErr  string
	}{
		{"split over nodes", []kubeletconfigv1beta1.MemoryReservation{reserve(0, "600Mi"), reserve(1, "500Mi")}, node("1100Mi"), ""},
		{"sum differs", []kubeletconfigv1beta1.MemoryReservation{reserve(0, "1Gi")}, node("1100Mi"),
			`the total amount "1Gi" of type "memory" is not equal to the value "1100Mi" determined by Node Allocatable feature`},
		{"missing NUMA node", []kubeletconfigv1beta1.MemoryReservation{reserve(2, "1Gi")}, node("1Gi"),
			"references a NUMA node 2 that does not exist on this machine"},
		{"nothing reserved", nil, v1.ResourceList{}, "you should specify the system reserved memory"},
		{"node reserves, reservedMemory not", nil, node("100Mi"), `the total amount "0" of type "memory"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := reservedPerNode(nodes, tc.reserved, tc.node)
			if tc.wantErr == "" {
				if err != nil || got[0][v1.ResourceMemory] != 600<<20 || got[1][v1.ResourceMemory] != 500<<20 {
					t.Errorf("reservedPerNode = %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "reservedMemory: ") {
				t.Errorf("error = %v, want one naming reservedMemory containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestReservationLargerThanTheNodeIsRefused(t *testing.T) {
	opts := staticOptions(t.TempDir(), 1, 8*gi, 9*gi)
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "less than the") {
		t.Errorf("New = %v, want a refusal naming the node", err)
	}
}
