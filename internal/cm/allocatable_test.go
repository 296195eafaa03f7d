package cm

import (
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestLimitPodsWritesAllocatableAndLiftsOldLimits(t *testing.T) {
	f := newFakeV1(t)
	m := startManager(t, f, Options{NodeMilliCPU: 4000})
	r := ReservationOf(v1.ResourceList{v1.ResourceCPU: resource.MustParse("3500m"), v1.ResourceMemory: resource.MustParse("6Gi"), "pid": resource.MustParse("1000")})
	if err := m.LimitPods(r); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"cpu,cpuacct/kubepods/cpu.shares":       "3584",
		"memory/kubepods/memory.limit_in_bytes": "6442450944",
		"pids/kubepods/pids.max":                "1000",
	} {
		if got := readValue(t, filepath.Join(f.root, file)); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
	// Not enforcing any more: the memory and pid limits are lifted, the cpu weight is the node's.
	if err := m.LimitPods(Reservation{MilliCPU: 4000}); err != nil {
		t.Fatal(err)
	}
	if got := readValue(t, filepath.Join(f.root, "memory/kubepods/memory.limit_in_bytes")); got != "-1" {
		t.Errorf("memory limit %s, want lifted (-1)", got)
	}
	if got := readValue(t, filepath.Join(f.root, "pids/kubepods/pids.max")); got != "max" {
		t.Errorf("pids.max %s, want max", got)
	}
}

func TestLimitReservedNeedsAnExistingCgroup(t *testing.T) {
	f := newFakeV1(t)
	f.writeAll(t, filepath.Join(f.root, "devices"), map[string]string{})
	m := startManager(t, f, Options{})
	r := Reservation{MilliCPU: 500, Memory: 1 << 30}
	err := m.LimitReserved("/system.slice", r, false)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("got %v, want an error saying the cgroup does not exist", err)
	}
	// Made where its limits and accounting live (as the node suite makes it), not under devices.
	for _, h := range m.create {
		if h.has("devices") {
			continue
		}
		if _, err := m.ensurePath(h, "/system.slice"); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.LimitReserved("system.slice", r, true); err != nil {
		t.Fatal(err)
	}
	if got := readValue(t, filepath.Join(f.root, "cpu,cpuacct/system.slice/cpu.shares")); got != "512" {
		t.Errorf("cpu.shares %s, want 512", got)
	}
	if got := readValue(t, filepath.Join(f.root, "memory/system.slice/memory.limit_in_bytes")); got == "1073741824" {
		t.Error("compressible-only enforcement limited memory")
	}
	if err := m.LimitReserved("system.slice", r, false); err != nil {
		t.Fatal(err)
	}
	if got := readValue(t, filepath.Join(f.root, "memory/system.slice/memory.limit_in_bytes")); got != "1073741824" {
		t.Errorf("memory limit %s, want 1Gi", got)
	}
}
