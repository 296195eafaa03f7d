package cadvisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs2"
	"k8s.io/utils/ptr"
)

// unified tells whether root is a cgroup v2 (unified) mount.
func unified(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// v2MemoryStat are the cgroup v1 memory.stat keys the series are read from, by the v2 key
// that counts the same (v2 counts are always hierarchical, so they stand for total_*).
var v2MemoryStat = map[string][]string{
	"file": {"total_cache"}, "anon": {"total_rss"}, "file_mapped": {"total_mapped_file"},
	"inactive_file": {"total_inactive_file"},
	"pgfault":       {"pgfault", "total_pgfault"}, "pgmajfault": {"pgmajfault", "total_pgmajfault"},
}

// readCgroupV2 reads the cgroup path under the v2 mount at root through runc's cgroup
// library (fs2), into the figures the v1 reader gives.
func readCgroupV2(root, path string) cgroupStats {
	var s cgroupStats
	dir := filepath.Join(root, path)
	mgr, err := fs2.NewManager(&cgroups.Cgroup{}, dir)
	if err != nil {
		return s
	}
	st, _ := mgr.GetStats() // a partial read still carries what could be read
	if st == nil {
		return s
	}
	has := func(file string) bool { _, err := os.Stat(filepath.Join(dir, file)); return err == nil }
	if has("cpu.stat") {
		cpu := st.CpuStats
		s.cpuUsageNs, s.cpuUserNs, s.cpuSystemNs = ptr.To(cpu.CpuUsage.TotalUsage), ptr.To(cpu.CpuUsage.UsageInUsermode), ptr.To(cpu.CpuUsage.UsageInKernelmode)
		s.cfsPeriods, s.cfsThrottled, s.cfsThrottledNs = ptr.To(cpu.ThrottlingData.Periods), ptr.To(cpu.ThrottlingData.ThrottledPeriods), ptr.To(cpu.ThrottlingData.ThrottledTime)
	}
	if weight := readUint(filepath.Join(dir, "cpu.weight")); weight != nil {
		s.cpuShares = ptr.To(weightToShares(*weight))
	}
	s.cpuQuota, s.cpuPeriod = readCPUMax(filepath.Join(dir, "cpu.max"))
	if has("memory.current") {
		mem := st.MemoryStats
		s.memUsage, s.memLimit = ptr.To(mem.Usage.Usage), ptr.To(mem.Usage.Limit)
		if has("memory.peak") {
			s.memMaxUsage = ptr.To(mem.Usage.MaxUsage)
		}
		s.memFailcnt = ptr.To(mem.Usage.Failcnt)
		if has("memory.swap.current") {
			s.memSwap, s.memSwapLimit = ptr.To(mem.SwapOnlyUsage.Usage), ptr.To(mem.SwapOnlyUsage.Limit)
		}
		s.memStat = map[string]uint64{}
		for key, v := range mem.Stats {
			for _, v1Key := range v2MemoryStat[key] {
				s.memStat[v1Key] = v
			}
		}
		s.memSoftLimit = readUint(filepath.Join(dir, "memory.low"))
		if n, err := mgr.OOMKillCount(); err == nil {
			s.oomKills = &n
		}
	}
	s.ioBytes = ioEntries(st.BlkioStats.IoServiceBytesRecursive)
	s.ioOps = ioEntries(st.BlkioStats.IoServicedRecursive)
	if has("pids.max") {
		s.pidsMax = ptr.To(st.PidsStats.Limit) // "max" reads as 0, as cAdvisor reports it
	}
	s.procs = readPIDs(filepath.Join(dir, "cgroup.procs"))
	s.tasks = readPIDs(filepath.Join(dir, "cgroup.threads"))
	return s
}

// weightToShares maps a v2 cpu.weight [1, 10000] back onto v1 cpu.shares [2, 262144], as
// cAdvisor reports container_spec_cpu_shares on v2.
func weightToShares(weight uint64) uint64 {
	if weight == 0 {
		return 0
	}
	return 2 + (weight-1)*262142/9999
}

// readCPUMax reads cpu.max ("max 100000" or "20000 100000"): no quota reads as -1.
func readCPUMax(file string) (quota, period *int64) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return nil, nil
	}
	p, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return nil, nil
	}
	q := int64(-1)
	if fields[0] != "max" {
		if q, err = strconv.ParseInt(fields[0], 10, 64); err != nil {
			return nil, nil
		}
	}
	return &q, &p
}

// ioEntries groups the library's per-device, per-operation io counts by device.
func ioEntries(entries []cgroups.BlkioStatEntry) []deviceIO {
	var out []deviceIO
	index := map[string]int{}
	for _, e := range entries {
		dev := fmt.Sprintf("%d:%d", e.Major, e.Minor)
		i, ok := index[dev]
		if !ok {
			i = len(out)
			index[dev] = i
			out = append(out, deviceIO{device: dev, ops: map[string]uint64{}})
		}
		d := &out[i]
		if _, seen := d.ops[e.Op]; !seen {
			d.order = append(d.order, e.Op)
		}
		d.ops[e.Op] += e.Value
	}
	return out
}
