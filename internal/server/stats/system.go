package stats

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// SystemContainer is a cgroup the summary reports under node.systemContainers: either the
// cgroups a process is in (PID) or one cgroup path in every hierarchy (Cgroup). The container
// manager names them (cm.SystemContainers); app hands them over, so that cm need not import
// the summary.
type SystemContainer struct {
	Name   string
	PID    int
	Cgroup string
}

// systemContainers reads CPU and memory of each system container; one that cannot be read
// is left out.
func (p *Provider) systemContainers(now time.Time) []statsapi.ContainerStats {
	if p.d.SystemContainers == nil {
		return nil
	}
	var out []statsapi.ContainerStats
	for _, sc := range p.d.SystemContainers() {
		paths := map[string]string{"cpuacct": sc.Cgroup, "memory": sc.Cgroup, "": sc.Cgroup}
		if sc.PID > 0 {
			var err error
			if paths, err = p.d.Host.processCgroups(sc.PID); err != nil {
				klog.V(2).InfoS("Cannot read a system container's cgroups", "name", sc.Name, "pid", sc.PID, "err", err)
				continue
			}
		}
		cs, ok := p.cgroupStats(sc.Name, paths, now)
		if ok {
			out = append(out, cs)
		}
	}
	return out
}

// processCgroups maps each controller (and "" for the v2 tree) to the process's cgroup.
func (h HostPaths) processCgroups(pid int) (map[string]string, error) {
	f, err := os.Open(filepath.Join(h.Proc, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	paths := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	return paths, sc.Err()
}

// cgroupStats reads one cgroup's CPU (cpuacct.usage, or cpu.stat on v2) and memory
// (usage, working set, RSS, faults).
func (p *Provider) cgroupStats(name string, paths map[string]string, now time.Time) (statsapi.ContainerStats, bool) {
	h := p.d.Host
	ts := metav1.NewTime(now)
	cs := statsapi.ContainerStats{Name: name}
	if cpu, dir, ok := h.cgroupCPU(paths); ok {
		cs.CPU = &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: ptr.To(cpu), UsageNanoCores: p.rates.nanoCores("system/"+name, now, cpu)}
		if st, err := os.Stat(dir); err == nil {
			cs.StartTime = metav1.NewTime(st.ModTime())
		}
	}
	if mem, ok := h.cgroupMemory(paths); ok {
		cs.Memory = &statsapi.MemoryStats{Time: ts, UsageBytes: ptr.To(mem.usage), WorkingSetBytes: ptr.To(mem.workingSet),
			RSSBytes: ptr.To(mem.rss), PageFaults: ptr.To(mem.pageFaults), MajorPageFaults: ptr.To(mem.majorPageFaults)}
		if mem.capacity > 0 { // as cAdvisor: what the cgroup's limit leaves
			cs.Memory.AvailableBytes = ptr.To(subFloor(mem.capacity, mem.workingSet))
		}
	}
	return cs, cs.CPU != nil || cs.Memory != nil
}

func (h HostPaths) cgroupCPU(paths map[string]string) (uint64, string, bool) {
	if path, ok := paths["cpuacct"]; ok {
		for _, mount := range []string{"cpuacct", "cpu,cpuacct"} {
			dir := filepath.Join(h.Cgroup, mount, path)
			if b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage")); err == nil {
				v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
				return v, dir, err == nil
			}
		}
	}
	dir := filepath.Join(h.Cgroup, paths[""])
	if kv, err := readKeyValues(filepath.Join(dir, "cpu.stat")); err == nil {
		if usec, ok := kv["usage_usec"]; ok {
			return usec * 1000, dir, true
		}
	}
	return 0, "", false
}

func (h HostPaths) cgroupMemory(paths map[string]string) (nodeMemory, bool) {
	if path, ok := paths["memory"]; ok {
		dir := filepath.Join(h.Cgroup, "memory", path)
		b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
		stat, serr := readKeyValues(filepath.Join(dir, "memory.stat"))
		if err == nil && serr == nil {
			usage, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			m := v1Memory(usage, stat)
			m.capacity = memoryLimit(filepath.Join(dir, "memory.limit_in_bytes"))
			return m, true
		}
	}
	dir := filepath.Join(h.Cgroup, paths[""])
	b, err := os.ReadFile(filepath.Join(dir, "memory.current"))
	stat, serr := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil || serr != nil {
		return nodeMemory{}, false
	}
	usage, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return nodeMemory{usage: usage, workingSet: subFloor(usage, stat["inactive_file"]), rss: stat["anon"],
		pageFaults: stat["pgfault"], majorPageFaults: stat["pgmajfault"], capacity: memoryLimit(filepath.Join(dir, "memory.max"))}, true
}

// v1Memory is a cgroup v1 memory cgroup's figures from its usage and memory.stat, as cAdvisor
// takes them: the subtree's working set and RSS ("total_"), but the cgroup's own page faults
// ("pgfault": the pods cgroup runs nothing itself and reports few; the root's total_pgfault
// is the whole machine's, past the suite's 1e9 bound within a day).
func v1Memory(usage uint64, stat map[string]uint64) nodeMemory {
	return nodeMemory{usage: usage, workingSet: subFloor(usage, stat["total_inactive_file"]), rss: stat["total_rss"],
		pageFaults: stat["pgfault"], majorPageFaults: stat["pgmajfault"]}
}

// memoryLimit reads a cgroup's memory limit; 0 when it has none ("max" on v2, the page-rounded
// maximum on v1) or it cannot be read.
func memoryLimit(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v >= 1<<62 {
		return 0
	}
	return v
}

// podProcessCount counts the processes of the pod whose sandbox process is pid: pids.current
// of the pod's cgroup (the sandbox cgroup's parent, named pod<uid>). Without pod cgroups
// there is no count.
func (h HostPaths) podProcessCount(pid int) (uint64, bool) {
	paths, err := h.processCgroups(pid)
	if err != nil {
		return 0, false
	}
	candidates := []string{}
	if p, ok := paths["pids"]; ok {
		candidates = append(candidates, filepath.Join(h.Cgroup, "pids", filepath.Dir(p)))
	}
	candidates = append(candidates, filepath.Join(h.Cgroup, filepath.Dir(paths[""])))
	for _, dir := range candidates {
		if !isPodCgroup(filepath.Base(dir)) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, "pids.current")); err == nil {
			n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// isPodCgroup tells a pod's cgroup by its name: pod<uid> with the cgroupfs driver,
// kubepods[-<qos>]-pod<uid>.slice with the systemd driver.
func isPodCgroup(name string) bool {
	if strings.HasPrefix(name, "pod") {
		return true
	}
	return strings.HasPrefix(name, "kubepods") && strings.Contains(name, "-pod") && strings.HasSuffix(name, ".slice")
}
