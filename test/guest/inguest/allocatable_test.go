//go:build guestvm

package inguest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestNodeAllocatableOnKubepodsSlice runs nodelet with kubeReserved and systemReserved and
// enforceNodeAllocatable [pods], as upstream by default: the kubepods slice is limited to
// capacity minus the reservations (hard eviction thresholds are not subtracted), in its
// cgroup files and in systemd's properties.
func TestNodeAllocatableOnKubepodsSlice(t *testing.T) {
	useDriver(t, "systemd")
	startNodelet(t, "cgroupDriver: systemd\nkubeReserved: {cpu: 200m, memory: 256Mi}\n"+
		"systemReserved: {cpu: 100m, memory: 128Mi}\nenforceNodeAllocatable: [pods]\n")
	memory := memTotal(t) - (256+128)<<20
	// 2 CPUs less 300m: 1700m, 1740 shares; weight 1 + 1738*9999/262142.
	wantFiles := map[string]string{
		"memory.max": strconv.FormatInt(memory, 10), "cpu.weight": "67",
	}
	// The upstream kubelet answers healthz before its container manager enforces allocatable
	// (it makes kubepods.slice at capacity first): wait for the files, then check all.
	testutil.WaitFor(t, time.Minute, "kubepods.slice's memory.max at allocatable", func() (bool, string) {
		got := readCgroup(t, "/kubepods.slice", "memory.max")
		return got == wantFiles["memory.max"], got
	})
	expectCgroupFiles(t, "/kubepods.slice", wantFiles)
	got := systemdShow(t, "kubepods.slice", "MemoryMax", "CPUWeight")
	if got["MemoryMax"] != wantFiles["memory.max"] || got["CPUWeight"] != wantFiles["cpu.weight"] {
		t.Errorf("systemd's kubepods.slice: %v; want MemoryMax=%s CPUWeight=%s", got, wantFiles["memory.max"], wantFiles["cpu.weight"])
	}
}

// memTotal is the machine's memory capacity in bytes, as cAdvisor reads it.
func memTotal(t *testing.T) int64 { return meminfo(t, "MemTotal") }

// meminfo reads one field of /proc/meminfo in bytes.
func meminfo(t *testing.T, key string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	t.Fatalf("no %s in /proc/meminfo", key)
	return 0
}
