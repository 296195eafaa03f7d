// Package machine reads what this machine offers (CPUs, memory, swap, huge pages, its IDs,
// kernel and operating system) once at start, and the node capacity and allocatable they give
// after what kube-reserved, system-reserved and the hard eviction thresholds hold back. The node
// status, the container manager, the memory manager, the runtime and the cAdvisor endpoint all
// read it; it imports none of them.
package machine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// MachinePaths says where machine facts are read from. Tests point it at a temporary tree.
type MachinePaths struct {
	Proc   string // /proc
	Sys    string // /sys
	Etc    string // /etc
	Cgroup string // /sys/fs/cgroup
	// Statfs reports the filesystem holding a path; syscall.Statfs when nil.
	Statfs func(path string, st *syscall.Statfs_t) error
	// NumCPU is the CPUs this process may run on; runtime.NumCPU when nil.
	NumCPU func() int
}

// HostPaths are the paths of the running machine.
func HostPaths() MachinePaths {
	return MachinePaths{Proc: "/proc", Sys: "/sys", Etc: "/etc", Cgroup: "/sys/fs/cgroup"}
}

// Machine holds what the node reports about its hardware and operating system. nodelet reads
// these itself rather than through cAdvisor.
type Machine struct {
	CPUs            int
	MemoryBytes     int64
	SwapBytes       int64                     // SwapTotal: the swap the host has, 0 without
	HugePages       map[v1.ResourceName]int64 // "hugepages-2Mi" → bytes pre-allocated
	MachineID       string
	SystemUUID      string
	BootID          string
	KernelVersion   string
	OSImage         string
	OperatingSystem string
	Architecture    string
}

// ReadMachine reads the machine facts. Facts that cannot be read are left empty and reported
// together in the error; the Machine is usable either way.
func ReadMachine(p MachinePaths) (*Machine, error) {
	m := &Machine{OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH}
	var problems []string
	note := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	m.CPUs = p.cpuCount()
	var err error
	m.MemoryBytes, m.SwapBytes, err = memInfo(filepath.Join(p.Proc, "meminfo"))
	note(err)
	m.HugePages, err = hugePages(filepath.Join(p.Sys, "kernel/mm/hugepages"))
	note(err)
	m.MachineID, err = readTrimmed(filepath.Join(p.Etc, "machine-id"))
	note(err)
	// product_uuid is root-only and absent on some virtual machines; the machine ID stands in.
	if m.SystemUUID, err = readTrimmed(filepath.Join(p.Sys, "class/dmi/id/product_uuid")); err != nil {
		m.SystemUUID = m.MachineID
	}
	m.BootID, err = readTrimmed(filepath.Join(p.Proc, "sys/kernel/random/boot_id"))
	note(err)
	// /proc/sys/kernel/osrelease is what uname(2) reports as the release.
	m.KernelVersion, err = readTrimmed(filepath.Join(p.Proc, "sys/kernel/osrelease"))
	note(err)
	m.OSImage, err = osImage(filepath.Join(p.Etc, "os-release"))
	note(err)
	if len(problems) > 0 {
		return m, fmt.Errorf("reading machine facts: %s", strings.Join(problems, "; "))
	}
	return m, nil
}

// FilesystemCapacity is the size in bytes of the filesystem holding path.
func (p MachinePaths) FilesystemCapacity(path string) (int64, error) {
	statfs := p.Statfs
	if statfs == nil {
		statfs = syscall.Statfs
	}
	var st syscall.Statfs_t
	if err := statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return int64(st.Blocks) * int64(st.Bsize), nil
}

// cpuCount is the CPUs we may use: the scheduler's count, or our cgroup's cpuset when narrower.
func (p MachinePaths) cpuCount() int {
	n := runtime.NumCPU()
	if p.NumCPU != nil {
		n = p.NumCPU()
	}
	if set, ok := p.cgroupCPUSet(); ok && set > 0 && set < n {
		return set
	}
	return n
}

// cgroupCPUSet counts the CPUs in the cpuset of this process's cgroup (v1 cpuset controller or
// the v2 unified hierarchy).
func (p MachinePaths) cgroupCPUSet() (int, bool) {
	data, err := os.ReadFile(filepath.Join(p.Proc, "self/cgroup"))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var file string
		switch {
		case hasController(parts[1], "cpuset"):
			file = filepath.Join(p.Cgroup, "cpuset", parts[2], "cpuset.cpus")
		case parts[0] == "0" && parts[1] == "":
			file = filepath.Join(p.Cgroup, parts[2], "cpuset.cpus.effective")
			if _, err := os.Stat(file); err != nil {
				file = filepath.Join(p.Cgroup, "unified", parts[2], "cpuset.cpus.effective")
			}
		default:
			continue
		}
		if list, err := readTrimmed(file); err == nil {
			if n, err := countCPUList(list); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// countCPUList counts a kernel CPU list such as "0-3,8,10-11".
func countCPUList(list string) (int, error) {
	if list == "" {
		return 0, fmt.Errorf("empty cpu list")
	}
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return 0, err
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return 0, fmt.Errorf("bad cpu range %q", part)
			}
		}
		n += last - first + 1
	}
	return n, nil
}

// memInfo is the machine's memory and swap in bytes, from /proc/meminfo: MemTotal, which it
// must list, and SwapTotal.
func memInfo(path string) (memTotal, swapTotal int64, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 3 || fields[2] != "kB" || (fields[0] != "MemTotal:" && fields[0] != "SwapTotal:") {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %s %w", path, fields[0], err)
		}
		if fields[0] == "MemTotal:" {
			memTotal, found = kb*1024, true
		} else {
			swapTotal = kb * 1024
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("%s has no MemTotal line", path)
	}
	return memTotal, swapTotal, nil
}

// hugePages reports, per supported page size, the bytes of huge pages pre-allocated (often 0).
func hugePages(dir string) (map[v1.ResourceName]int64, error) {
	pools, err := topology.HugePages(dir)
	if pools == nil {
		return nil, err
	}
	out := make(map[v1.ResourceName]int64, len(pools))
	for name, size := range pools {
		out[name] = int64(size)
	}
	return out, nil
}

func osImage(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("PRETTY_NAME=")); ok {
			return strings.Trim(string(v), `"'`), nil
		}
	}
	return "", fmt.Errorf("%s: no PRETTY_NAME", path)
}

func readTrimmed(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}
