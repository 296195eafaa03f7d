package cadvisor

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupStats are one cgroup's figures on cgroup v1; a nil field could not be read.
type cgroupStats struct {
	cpuUsageNs                                  *uint64
	cfsPeriods, cfsThrottled, cfsThrottledNs    *uint64
	cpuShares                                   *uint64
	cpuQuota, cpuPeriod                         *int64
	memUsage, memMaxUsage, memFailcnt, memLimit *uint64
	memStat                                     map[string]uint64
	oomKills                                    *uint64
	io                                          []deviceIO
	procs, tasks                                []int
}

// readCgroup reads the cgroup path (e.g. /kubepods/burstable/pod<uid>/<id>) under the v1
// mounts at root.
func readCgroup(root, path string) cgroupStats {
	var s cgroupStats
	cpu := firstDir(root, path, "cpu,cpuacct", "cpuacct")
	s.cpuUsageNs = readUint(filepath.Join(cpu, "cpuacct.usage"))
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
	if oc := readKV(filepath.Join(mem, "memory.oom_control")); oc != nil {
		s.oomKills = get(oc, "oom_kill")
	}
	s.io = blkioBytes(filepath.Join(root, "blkio", path, "blkio.throttle.io_service_bytes"))
	pids := firstDir(root, path, "pids", "memory")
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

// deviceIO is the bytes read and written on one block device ("major:minor").
type deviceIO struct {
	device      string
	read, write uint64
}

// blkioBytes reads the Read and Write lines of blkio.throttle.io_service_bytes per device.
func blkioBytes(file string) []deviceIO {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	byDev := map[string]*deviceIO{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || (fields[1] != "Read" && fields[1] != "Write") {
			continue
		}
		d := byDev[fields[0]]
		if d == nil {
			d = &deviceIO{device: fields[0]}
			byDev[fields[0]] = d
			order = append(order, fields[0])
		}
		n, _ := strconv.ParseUint(fields[2], 10, 64)
		if fields[1] == "Read" {
			d.read += n
		} else {
			d.write += n
		}
	}
	out := make([]deviceIO, 0, len(order))
	for _, dev := range order {
		out = append(out, *byDev[dev])
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
