package memorymanager

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The container hook pins a Guaranteed container's memory to its NUMA node and leaves a
// Burstable one's config alone.
func TestContainerHookSetsTheMemoryNodes(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	g := guaranteedPod("g", container("app", 2*gi, false))
	b := guaranteedPod("b", container("app", 2*gi, true))
	for _, pod := range []*v1.Pod{g, b} {
		if err := admit(t, m, pod); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &runtimeapi.ContainerConfig{}
	if err := m.ApplyContainer(context.Background(), g, &g.Spec.Containers[0], cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.GetLinux().GetResources().GetCpusetMems(), mems(m, g, "app"); got != want || got == "" {
		t.Errorf("Guaranteed: cpuset.mems %q, want %q", got, want)
	}
	cfg = &runtimeapi.ContainerConfig{}
	if err := m.ApplyContainer(context.Background(), b, &b.Spec.Containers[0], cfg); err != nil || cfg.Linux != nil {
		t.Errorf("Burstable: err %v, linux %v", err, cfg.Linux)
	}
}
