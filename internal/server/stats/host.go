package stats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// HostPaths says where host statistics are read from; tests point them at temp files.
type HostPaths struct {
	Proc   string // default /proc
	Cgroup string // default /sys/fs/cgroup
}

func (h HostPaths) withDefaults() HostPaths {
	if h.Proc == "" {
		h.Proc = "/proc"
	}
	if h.Cgroup == "" {
		h.Cgroup = "/sys/fs/cgroup"
	}
	return h
}

// nodeMemory is the machine's memory use, as the root cgroup (v1, v2) or /proc (otherwise) sees it.
type nodeMemory struct {
	capacity, usage, workingSet, rss, pageFaults, majorPageFaults uint64
}

// cpuUsage returns the CPU time, in nanoseconds, used by everything on the machine: the root
// cgroup's cpuacct.usage on cgroup v1, the root cpu.stat on v2, else the busy jiffies of
// /proc/stat.
func (h HostPaths) cpuUsage() (uint64, error) {
	for _, dir := range []string{"cpuacct", "cpu,cpuacct"} {
		if b, err := os.ReadFile(filepath.Join(h.Cgroup, dir, "cpuacct.usage")); err == nil {
			return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
	}
	if kv, err := readKeyValues(filepath.Join(h.Cgroup, "cpu.stat")); err == nil {
		if usec, ok := kv["usage_usec"]; ok {
			return usec * 1000, nil
		}
	}
	return h.procStatBusy()
}

// procStatBusy sums the non-idle jiffies of the "cpu" line of /proc/stat (USER_HZ is 100 on
// Linux, so one jiffy is 10ms).
func (h HostPaths) procStatBusy() (uint64, error) {
	b, err := os.ReadFile(filepath.Join(h.Proc, "stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		var busy uint64
		for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", filepath.Join(h.Proc, "stat"), err)
			}
			busy += v
		}
		return busy * uint64(10*time.Millisecond), nil
	}
	return 0, errors.New("no cpu line in " + filepath.Join(h.Proc, "stat"))
}

// memory reads the machine's memory use. On cgroup v1 the root memory cgroup counts every
// process, as cAdvisor reports it; on v2 meminfo gives the usage and the root's memory.stat
// the rest, as runc's fs2 reads it for cAdvisor; elsewhere /proc/meminfo and /proc/vmstat
// stand in.
// Working set is usage minus inactive file pages, the part the kernel cannot easily reclaim.
func (h HostPaths) memory() (nodeMemory, error) {
	info, err := readKeyValues(filepath.Join(h.Proc, "meminfo"))
	if err != nil {
		return nodeMemory{}, err
	}
	m := nodeMemory{capacity: info["MemTotal"] * 1024}
	if m.capacity == 0 {
		return nodeMemory{}, errors.New("no MemTotal in meminfo")
	}
	dir := filepath.Join(h.Cgroup, "memory")
	if b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes")); err == nil {
		stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return nodeMemory{}, err
		}
		usage, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nodeMemory{}, err
		}
		root := v1Memory(usage, stat)
		root.capacity = m.capacity
		return root, nil
	}
	m.usage = subFloor(m.capacity, info["MemFree"]*1024)
	// cgroup v2's root has no memory.current but a memory.stat: runc's fs2 (cAdvisor's
	// reader) takes usage from meminfo as above and the rest from the root's memory.stat.
	if stat, err := readKeyValues(filepath.Join(h.Cgroup, "memory.stat")); err == nil {
		m.workingSet = subFloor(m.usage, stat["inactive_file"])
		m.rss, m.pageFaults, m.majorPageFaults = stat["anon"], stat["pgfault"], stat["pgmajfault"]
		return m, nil
	}
	m.workingSet = subFloor(m.usage, info["Inactive(file)"]*1024)
	m.rss = info["AnonPages"] * 1024
	if vm, err := readKeyValues(filepath.Join(h.Proc, "vmstat")); err == nil {
		m.pageFaults, m.majorPageFaults = vm["pgfault"], vm["pgmajfault"]
	}
	return m, nil
}

// bootTime is when the machine started (btime of /proc/stat).
func (h HostPaths) bootTime() (time.Time, error) {
	kv, err := readKeyValues(filepath.Join(h.Proc, "stat"))
	if err != nil {
		return time.Time{}, err
	}
	if kv["btime"] == 0 {
		return time.Time{}, errors.New("no btime in " + filepath.Join(h.Proc, "stat"))
	}
	return time.Unix(int64(kv["btime"]), 0), nil
}

// processLimits returns the pid limit and the number of tasks now (the total of
// /proc/loadavg's "running/total" field, the same count sysinfo gives).
func (h HostPaths) processLimits() (maxPID, tasks int64, err error) {
	b, err := os.ReadFile(filepath.Join(h.Proc, "sys", "kernel", "pid_max"))
	if err != nil {
		return 0, 0, err
	}
	if maxPID, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
		return 0, 0, err
	}
	b, err = os.ReadFile(filepath.Join(h.Proc, "loadavg"))
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 4 || !strings.Contains(f[3], "/") {
		return 0, 0, fmt.Errorf("unexpected loadavg %q", b)
	}
	tasks, err = strconv.ParseInt(f[3][strings.Index(f[3], "/")+1:], 10, 64)
	return maxPID, tasks, err
}

// ifaceStats is one line of /proc/net/dev.
type ifaceStats struct {
	name                                 string
	rxBytes, rxErrors, txBytes, txErrors uint64
}

// readNetDev parses a /proc/<pid>/net/dev file, skipping interfaces for which skip is true.
func readNetDev(path string, skip func(name string) bool) ([]ifaceStats, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []ifaceStats
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		name = strings.TrimSpace(name)
		if !ok || skip(name) {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 11 {
			continue // header lines have no colon; anything else short is malformed
		}
		var v [11]uint64
		for _, i := range []int{0, 2, 8, 10} {
			if v[i], err = strconv.ParseUint(f[i], 10, 64); err != nil {
				return nil, fmt.Errorf("%s: interface %s: %w", path, name, err)
			}
		}
		out = append(out, ifaceStats{name: name, rxBytes: v[0], rxErrors: v[2], txBytes: v[8], txErrors: v[10]})
	}
	return out, sc.Err()
}

// hostInterfaceSkipped drops loopback and the host ends of pod veth pairs, whose traffic is the
// pods' own (as cAdvisor does for the machine's network).
func hostInterfaceSkipped(name string) bool {
	return name == "lo" || strings.HasPrefix(name, "veth")
}

func podInterfaceSkipped(name string) bool { return name == "lo" }

// readKeyValues parses "key value [unit]" or "key: value [unit]" lines into numbers; lines
// whose value is not a number are ignored.
func readKeyValues(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	return out, nil
}

func subFloor(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
