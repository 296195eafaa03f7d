package cm

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestHostCgroupV1 runs the manager against the host's cgroupfs, under a uniquely named
// cgroup root of its own, and removes everything it made. It needs root and cgroup v1.
func TestHostCgroupV1(t *testing.T) {
	const root = "/sys/fs/cgroup"
	if os.Geteuid() != 0 || isFile(filepath.Join(root, "cgroup.controllers")) || !isFile(filepath.Join(root, "memory", "cgroup.procs")) {
		t.Skip("needs root and cgroup v1")
	}
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	testRoot := "/nodelet-test-" + hex.EncodeToString(suffix)
	m, err := NewQOSCgroups(Options{CgroupRoot: testRoot, PodPidsLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, h := range m.all {
			if err := m.removeTree(filepath.Join(h.dir, testRoot)); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	parent, err := m.EnsurePod(burstable("real", "100m"))
	if err != nil {
		t.Fatal(err)
	}
	if want := testRoot + "/kubepods/burstable/podreal"; parent != want {
		t.Errorf("parent %q, want %q", parent, want)
	}
	cpu, _ := m.cpuHierarchy()
	checks := map[string]string{
		filepath.Join(cpu.dir, parent, "cpu.shares"):                   "102",
		filepath.Join(cpu.dir, parent, "cpu.cfs_quota_us"):             "20000",
		filepath.Join(root, "memory", parent, "memory.limit_in_bytes"): "209715200",
		filepath.Join(root, "pids", parent, "pids.max"):                "100",
	}
	for file, want := range checks {
		if got := readValue(t, file); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
	if got := readValue(t, filepath.Join(root, "cpuset", parent, "cpuset.cpus")); got == "" {
		t.Error("pod cpuset has no cpus")
	}
	if err := m.RemovePod("real"); err != nil {
		t.Fatal(err)
	}
	for _, h := range m.all {
		if exists(filepath.Join(h.dir, parent)) {
			t.Errorf("pod cgroup left in %s", h.dir)
		}
	}
}
