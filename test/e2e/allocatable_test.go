//go:build e2e

package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// TestNodeAllocatableEnforcedOnKubepods starts nodelet with kube- and system-reserved memory
// and CPU: with enforceNodeAllocatable [pods] (the default) the kubepods cgroup is limited to
// capacity minus the reservations, so pods cannot eat into what the system keeps. With
// kubeletCgroups nodelet runs in that cgroup.
func TestNodeAllocatableEnforcedOnKubepods(t *testing.T) {
	t.Cleanup(func() { // registered first, so it runs after nodelet has stopped
		for _, c := range []string{"memory", "cpu", "pids", "cpuset"} {
			_ = os.Remove("/sys/fs/cgroup/" + c + "/nodelet-e2e.slice")
		}
	})
	n := startNodelet(t, "--kube-reserved=cpu=200m,memory=512Mi", "--system-reserved=cpu=300m,memory=256Mi",
		"--kubelet-cgroups=/nodelet-e2e.slice")
	capacity := readMeminfoKB(t, "MemTotal") * 1024
	wantMemory := capacity - (512+256)<<20
	cores := int64(len(onlineCPUs(t)))
	wantShares := (cores*1000 - 500) * 1024 / 1000
	testutil.WaitFor(t, 10*time.Second, "kubepods limits", func() (bool, string) {
		mem := readInt(t, "/sys/fs/cgroup/memory/kubepods/memory.limit_in_bytes")
		shares := readInt(t, "/sys/fs/cgroup/cpu/kubepods/cpu.shares")
		return mem == wantMemory && shares == wantShares,
			"memory.limit_in_bytes " + itoa(mem) + " want " + itoa(wantMemory) + ", cpu.shares " + itoa(shares) + " want " + itoa(wantShares)
	})
	cg, err := os.ReadFile("/proc/" + strconv.Itoa(n.cmd.Process.Pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cg), ":memory:/nodelet-e2e.slice\n") {
		t.Errorf("nodelet is not in its kubeletCgroups:\n%s", cg)
	}
}

func onlineCPUs(t *testing.T) []int {
	t.Helper()
	var out []int
	for i := 0; ; i++ {
		if _, err := os.Stat("/sys/devices/system/cpu/cpu" + strconv.Itoa(i)); err != nil {
			return out
		}
		out = append(out, i)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
