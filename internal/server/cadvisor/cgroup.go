package cadvisor

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"
)

// cgroupStats are one cgroup's figures; a nil field could not be read.
type cgroupStats struct {
	cpuUsageNs                                  *uint64
	cpuUserNs, cpuSystemNs                      *uint64
	cfsPeriods, cfsThrottled, cfsThrottledNs    *uint64
	cpuShares                                   *uint64
	cpuQuota, cpuPeriod                         *int64
	memUsage, memMaxUsage, memFailcnt, memLimit *uint64
	memStat                                     map[string]uint64
	memSoftLimit, memSwapLimit, memSwap         *uint64
	oomKills                                    *uint64
	ioBytes, ioOps                              []deviceIO
	pidsMax                                     *uint64
	procs, tasks                                []int
}

// readCgroup reads the cgroup path (e.g. /kubepods/burstable/pod<uid>/<id>) under the v1
// mounts or the v2 mount at root.
func readCgroup(root, path string) cgroupStats {
	if unified(root) {
		return readCgroupV2(root, path)
	}
	var s cgroupStats
	cpu := firstDir(root, path, "cpu,cpuacct", "cpuacct")
	s.cpuUsageNs = readUint(filepath.Join(cpu, "cpuacct.usage"))
	if st := readKV(filepath.Join(cpu, "cpuacct.stat")); st != nil {
		s.cpuUserNs, s.cpuSystemNs = ticksToNs(get(st, "user")), ticksToNs(get(st, "system"))
	}
	cpuCtl := firstDir(root, path, "cpu,cpuacct", "cpu")
	if st := readKV(filepath.Join(cpuCtl, "cpu.stat")); st != nil {
		s.cfsPeriods, s.cfsThrottled, s.cfsThrottledNs = get(st, "nr_periods"), get(st, "nr_throttled"), get(st, "throttled_time")
	}
	s.cpuShares = readUint(filepath.Join(cpuCtl, "cpu.shares"))
	s.cpuQuota = readInt(filepath.Join(cpuCtl, "cpu.cfs_quota_us"))
	s.cpuPeriod = readInt(filepath.Join(cpuCtl, "cpu.cfs_period_us"))
	mem := filepath.Join(root, "memory", path)
	s.memUsage = readUint(filepath.Join(mem, "memory.usage_in_bytes"))
	s.memMaxUsage = readUint(filepath.Join(mem, "memory.max_usage_in_bytes"))
	s.memFailcnt = readUint(filepath.Join(mem, "memory.failcnt"))
	s.memLimit = readUint(filepath.Join(mem, "memory.limit_in_bytes"))
	s.memStat = readKV(filepath.Join(mem, "memory.stat"))
	s.memSoftLimit = readUint(filepath.Join(mem, "memory.soft_limit_in_bytes"))
	// memsw (memory plus swap) exists only with swap accounting; cAdvisor reports swap as the
	// difference.
	s.memSwapLimit = readUint(filepath.Join(mem, "memory.memsw.limit_in_bytes"))
	if memsw := readUint(filepath.Join(mem, "memory.memsw.usage_in_bytes")); memsw != nil && s.memUsage != nil {
		s.memSwap = ptr.To(*memsw - min(*memsw, *s.memUsage))
	}
	if oc := readKV(filepath.Join(mem, "memory.oom_control")); oc != nil {
		s.oomKills = get(oc, "oom_kill")
	}
	s.ioBytes = blkio(filepath.Join(root, "blkio", path, "blkio.throttle.io_service_bytes"))
	s.ioOps = blkio(filepath.Join(root, "blkio", path, "blkio.throttle.io_serviced"))
	pids := firstDir(root, path, "pids", "memory")
	if limit, err := os.ReadFile(filepath.Join(root, "pids", path, "pids.max")); err == nil {
		s.pidsMax = ptr.To(uint64(0)) // "max": unlimited, which cAdvisor reports as 0
		if v, err := strconv.ParseUint(strings.TrimSpace(string(limit)), 10, 64); err == nil {
			s.pidsMax = &v
		}
	}
	s.procs = readPIDs(filepath.Join(pids, "cgroup.procs"))
	s.tasks = readPIDs(filepath.Join(pids, "tasks"))
	return s
}

func firstDir(root, path string, mounts ...string) string {
	for _, m := range mounts {
		dir := filepath.Join(root, m, path)
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
	}
	return filepath.Join(root, mounts[len(mounts)-1], path)
}

func readUint(file string) *uint64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return nil
	}
	return &v
}

func readInt(file string) *int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return nil
	}
	return &v
}

func readKV(file string) map[string]uint64 {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

func get(m map[string]uint64, key string) *uint64 {
	v, ok := m[key]
	if !ok {
		return nil
	}
	return &v
}

// userHZ is the unit of cpuacct.stat: clock ticks of 1/100 s (USER_HZ is 100 on Linux).
const userHZ = 100

func ticksToNs(ticks *uint64) *uint64 {
	if ticks == nil {
		return nil
	}
	return ptr.To(*ticks * (1e9 / userHZ))
}

// deviceIO is one block device's ("major:minor") figures by operation (Read, Write, Sync,
// Async, Discard, Total), from a blkio.throttle file.
type deviceIO struct {
	device string
	ops    map[string]uint64
	order  []string // the operations in file order
}

// blkio reads a blkio.throttle.io_service_bytes or io_serviced file per device.
func blkio(file string) []deviceIO {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []deviceIO
	index := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 { // the last line, "Total N", sums every device
			continue
		}
		i, ok := index[fields[0]]
		if !ok {
			i = len(out)
			index[fields[0]] = i
			out = append(out, deviceIO{device: fields[0], ops: map[string]uint64{}})
		}
		n, _ := strconv.ParseUint(fields[2], 10, 64)
		d := &out[i]
		if _, seen := d.ops[fields[1]]; !seen {
			d.order = append(d.order, fields[1])
		}
		d.ops[fields[1]] += n
	}
	return out
}

// deviceName turns "major:minor" into /dev/<name>, as cAdvisor labels devices.
func deviceName(sys, majMin string) string {
	b, err := os.ReadFile(filepath.Join(sys, "dev", "block", majMin, "uevent"))
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "DEVNAME="); ok {
				return "/dev/" + name
			}
		}
	}
	return majMin
}

func readPIDs(file string) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// processFiles counts the open files and sockets of the processes, and the lowest soft
// limit on open files among them.
func processFiles(proc string, pids []int) (fds, sockets uint64, nofile *uint64) {
	for _, pid := range pids {
		dir := filepath.Join(proc, strconv.Itoa(pid), "fd")
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		fds += uint64(len(entries))
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "socket:") {
				sockets++
			}
		}
		if soft := softNofile(filepath.Join(proc, strconv.Itoa(pid), "limits")); soft != nil && (nofile == nil || *soft < *nofile) {
			nofile = soft
		}
	}
	return fds, sockets, nofile
}

func softNofile(file string) *uint64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return &v
				}
			}
		}
	}
	return nil
}
