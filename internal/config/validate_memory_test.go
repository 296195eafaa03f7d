package config

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestValidateReservedMemory(t *testing.T) {
	reserve := func(node int32, name corev1.ResourceName, amount string) kubeletconfigv1beta1.MemoryReservation {
		return kubeletconfigv1beta1.MemoryReservation{NumaNode: node, Limits: corev1.ResourceList{name: resource.MustParse(amount)}}
	}
	for _, tt := range []struct {
		name     string
		reserved []kubeletconfigv1beta1.MemoryReservation
		want     string // "" accepts
	}{
		{"memory and huge pages", []kubeletconfigv1beta1.MemoryReservation{reserve(0, "memory", "1Gi"), reserve(1, "hugepages-2Mi", "2Mi")}, ""},
		{"unknown kind", []kubeletconfigv1beta1.MemoryReservation{reserve(0, "cpu", "1")},
			`reservedMemory[0]: the limit type "cpu" for NUMA node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted`},
		{"zero", []kubeletconfigv1beta1.MemoryReservation{reserve(0, "memory", "0")},
			`reservedMemory[0]: reserved memory may not be zero for NUMA node 0 and resource "memory"`},
		{"duplicate", []kubeletconfigv1beta1.MemoryReservation{reserve(0, "memory", "1Gi"), reserve(0, "memory", "2Gi")},
			`reservedMemory[1]: the reserved memory has a duplicate value for NUMA node 0 and resource "memory"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := defaulted()
			c.MemoryManagerPolicy = kubeletconfigv1beta1.StaticMemoryManagerPolicy
			c.ReservedMemory = tt.reserved
			err := Validate(c)
			if tt.want == "" {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "invalid configuration: "+tt.want) {
				t.Errorf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestValidateMemoryManagerPolicy(t *testing.T) {
	c := defaulted()
	c.MemoryManagerPolicy = "static" // upstream spells it Static
	if err := Validate(c); err == nil || !strings.Contains(err.Error(), "memoryManagerPolicy") {
		t.Errorf("Validate = %v, want memoryManagerPolicy refused", err)
	}
}

func TestMemoryManagerFlags(t *testing.T) {
	cfg := mustComplete(t, "--memory-manager-policy=Static", "--reserved-memory=0:memory=1Gi,hugepages-2Mi=2Mi;1:memory=512Mi", "--reserved-memory=2:memory=1Mi")
	kc := cfg.Kubelet
	if kc.MemoryManagerPolicy != "Static" || len(kc.ReservedMemory) != 3 {
		t.Fatalf("policy %q, reservedMemory %v", kc.MemoryManagerPolicy, kc.ReservedMemory)
	}
	first := kc.ReservedMemory[0]
	if first.NumaNode != 0 || first.Limits.Memory().String() != "1Gi" || first.Limits.Name("hugepages-2Mi", resource.BinarySI).String() != "2Mi" {
		t.Errorf("first reservation = %+v", first)
	}
	if kc.ReservedMemory[2].NumaNode != 2 {
		t.Errorf("a repeated flag adds: %+v", kc.ReservedMemory)
	}
	v := &reservedMemoryValue{reservations: &[]kubeletconfigv1beta1.MemoryReservation{}}
	for _, bad := range []string{"memory=1Gi", "x:memory=1Gi", "0:memory", "0:memory=lots"} {
		if err := v.Set(bad); err == nil {
			t.Errorf("--reserved-memory=%s accepted", bad)
		}
	}
}
