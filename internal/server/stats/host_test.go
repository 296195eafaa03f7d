package stats

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestHostStatsFromCgroupV1(t *testing.T) {
	h := fakeHost(t)
	cpu, err := h.cpuUsage()
	if err != nil || cpu != 5e9 {
		t.Fatalf("cpuUsage = %d, %v; want 5e9 from cpuacct.usage", cpu, err)
	}
	mem, err := h.memory()
	if err != nil {
		t.Fatal(err)
	}
	want := nodeMemory{capacity: 4 << 30, usage: 3 << 30, workingSet: 2 << 30, rss: 512 << 20, pageFaults: 777, majorPageFaults: 7}
	if mem != want {
		t.Fatalf("memory = %+v, want %+v", mem, want)
	}
	boot, err := h.bootTime()
	if err != nil || !boot.Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("bootTime = %v, %v", boot, err)
	}
	maxPID, tasks, err := h.processLimits()
	if err != nil || maxPID != 4194304 || tasks != 345 {
		t.Fatalf("processLimits = %d, %d, %v", maxPID, tasks, err)
	}
}

func TestHostStatsWithoutCgroupV1FallBackToProc(t *testing.T) {
	h := fakeHost(t)
	if err := os.RemoveAll(h.Cgroup); err != nil {
		t.Fatal(err)
	}
	cpu, err := h.cpuUsage()
	// user 100 + system 50 jiffies of 10ms.
	if err != nil || cpu != 1500*uint64(time.Millisecond) {
		t.Fatalf("cpuUsage = %d, %v; want 1.5s of busy jiffies", cpu, err)
	}
	mem, err := h.memory()
	if err != nil {
		t.Fatal(err)
	}
	used := uint64(4<<30 - 512<<20)
	if mem.usage != used || mem.workingSet != used-256<<20 || mem.rss != 128<<20 {
		t.Fatalf("memory from meminfo = %+v", mem)
	}
}

func TestHostCPUFromCgroupV2(t *testing.T) {
	h := fakeHost(t)
	os.RemoveAll(h.Cgroup)
	writeFiles(t, h.Cgroup, map[string]string{"cpu.stat": "usage_usec 2500000\nuser_usec 2000000\n"})
	if cpu, err := h.cpuUsage(); err != nil || cpu != 2500000000 {
		t.Fatalf("cpuUsage = %d, %v; want usage_usec in ns", cpu, err)
	}
}

// TestHostMemoryFromCgroupV2 reads the working set as upstream does on cgroup v2: usage from
// meminfo, less the root memory.stat's inactive_file (not meminfo's Inactive(file), which
// counts pages no cgroup is charged for).
func TestHostMemoryFromCgroupV2(t *testing.T) {
	h := fakeHost(t)
	os.RemoveAll(h.Cgroup)
	writeFiles(t, h.Cgroup, map[string]string{
		"cgroup.controllers": "cpu memory pids\n",
		"memory.stat":        "anon 104857600\ninactive_file 52428800\npgfault 900\npgmajfault 9\n",
	})
	mem, err := h.memory()
	if err != nil {
		t.Fatal(err)
	}
	used := uint64(4<<30 - 512<<20)
	want := nodeMemory{capacity: 4 << 30, usage: used, workingSet: used - 50<<20, rss: 100 << 20, pageFaults: 900, majorPageFaults: 9}
	if mem != want {
		t.Fatalf("memory on cgroup v2 = %+v, want %+v", mem, want)
	}
}

func TestReadNetDev(t *testing.T) {
	h := fakeHost(t)
	got, err := readNetDev(filepath.Join(h.Proc, "net", "dev"), hostInterfaceSkipped)
	if err != nil {
		t.Fatal(err)
	}
	want := []ifaceStats{
		{name: "eth0", rxBytes: 5000, rxErrors: 1, txBytes: 7000, txErrors: 2},
		{name: "nodelet0", rxBytes: 300, txBytes: 400},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("interfaces = %+v, want %+v (lo and veth skipped)", got, want)
	}
}

func TestDiskUsageCountsBlocksAndHardLinksOnce(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a": string(make([]byte, 10000)), "sub/b": "x"})
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub", "a-link")); err != nil {
		t.Fatal(err)
	}
	u, err := diskUsage(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// dir, a, sub, sub/b; the link is a's inode again.
	if u.inodes != 4 || u.bytes < 10000 {
		t.Fatalf("usage = %+v, want 4 inodes and at least 10000 bytes", u)
	}
	if u, err := diskUsage(context.Background(), filepath.Join(dir, "missing")); err != nil || u != (usage{}) {
		t.Fatalf("missing dir: %+v, %v", u, err)
	}
}
