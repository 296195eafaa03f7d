package cm

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestPodConfigReadsAndResizesV1(t *testing.T) {
	f := newFakeV1(t)
	m := startManager(t, f, Options{})
	pod := burstable("r1", "100m") // limits 200m, 200Mi
	if _, err := m.EnsurePod(pod); err != nil {
		t.Fatal(err)
	}
	resized := burstable("r1", "100m")
	resized.Spec.Containers[0].Resources.Limits = resources("500m", "300Mi")
	current, desired, err := m.PodConfig(resized)
	if err != nil {
		t.Fatal(err)
	}
	if want := (PodConfig{CPUShares: 102, CPUQuota: 20000, Memory: 200 << 20}); current != want {
		t.Errorf("current = %+v, want %+v", current, want)
	}
	if want := (PodConfig{CPUShares: 102, CPUQuota: 50000, Memory: 300 << 20}); desired != want {
		t.Errorf("desired = %+v, want %+v", desired, want)
	}
	if err := m.SetPodConfig(resized, PodConfig{CPUQuota: desired.CPUQuota}); err != nil {
		t.Fatal(err)
	}
	dir := "kubepods/burstable/podr1"
	if got := readValue(t, filepath.Join(f.root, "cpu,cpuacct", dir, "cpu.cfs_quota_us")); got != "50000" {
		t.Errorf("cpu.cfs_quota_us = %s, want 50000", got)
	}
	if got := readValue(t, filepath.Join(f.root, "memory", dir, "memory.limit_in_bytes")); got != "209715200" {
		t.Errorf("memory untouched by a cpu-only change: got %s", got)
	}
	if err := os.WriteFile(filepath.Join(f.root, "memory", dir, "memory.usage_in_bytes"), []byte("12345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := m.PodMemoryUsage(pod); err != nil || n != 12345 {
		t.Errorf("PodMemoryUsage = %d, %v", n, err)
	}
}

func TestPodConfigUnlimitedV1AndV2(t *testing.T) {
	for name, f := range map[string]*fakeCgroupFS{"v1": newFakeV1(t), "v2": newFakeV2(t)} {
		m := startManager(t, f, Options{})
		pod := newPod("u-"+name, v1.ResourceRequirements{Requests: resources("100m", "")})
		if _, err := m.EnsurePod(pod); err != nil {
			t.Fatal(err)
		}
		current, _, err := m.PodConfig(pod)
		if err != nil {
			t.Fatal(name, err)
		}
		shares := int64(102)
		if f.v2 {
			shares = weightToShares(sharesToWeight(shares)) // v2's weight is coarser
		}
		if current.CPUQuota != unlimited || current.Memory != unlimited || current.CPUShares != shares {
			t.Errorf("%s: current = %+v, want shares %d and no quota or memory limit", name, current, shares)
		}
	}
}
