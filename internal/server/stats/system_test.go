package stats

import (
	"testing"
	"time"
)

func TestSystemContainersAndPodProcessCount(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"proc/42/cgroup": "4:memory:/system.slice/containerd.service\n3:pids:/kubepods/pod1/sb\n2:cpu,cpuacct:/system.slice/containerd.service\n0::/\n",
		"cgroup/cpu,cpuacct/system.slice/containerd.service/cpuacct.usage":    "5000000000\n",
		"cgroup/memory/system.slice/containerd.service/memory.usage_in_bytes": "1000\n",
		"cgroup/memory/system.slice/containerd.service/memory.stat":           "total_inactive_file 300\ntotal_rss 600\npgfault 7\npgmajfault 1\ntotal_pgfault 70000\ntotal_pgmajfault 10\n",
		"cgroup/cpuacct/kubepods/cpuacct.usage":                               "9\n",
		"cgroup/memory/kubepods/memory.usage_in_bytes":                        "2000\n",
		"cgroup/memory/kubepods/memory.stat":                                  "total_inactive_file 500\npgfault 0\ntotal_pgfault 2049692\n",
		"cgroup/memory/kubepods/memory.limit_in_bytes":                        "4000\n",
		"cgroup/memory/system.slice/containerd.service/memory.limit_in_bytes": "9223372036854771712\n",
		"cgroup/pids/kubepods/pod1/pids.current":                              "3\n",
	})
	now := time.Unix(100, 0)
	p := NewSummaryProvider(Deps{Host: HostPaths{Proc: root + "/proc", Cgroup: root + "/cgroup"}, Now: func() time.Time { return now },
		SystemContainers: func() []SystemContainer {
			return []SystemContainer{{Name: "runtime", PID: 42}, {Name: "pods", Cgroup: "/kubepods"}, {Name: "kubelet", PID: 99}}
		}})
	got := p.systemContainers(now)
	if len(got) != 2 {
		t.Fatalf("got %d system containers, want runtime and pods (pid 99 has no cgroup file): %+v", len(got), got)
	}
	rt, pods := got[0], got[1]
	if rt.Name != "runtime" || *rt.CPU.UsageCoreNanoSeconds != 5e9 || *rt.Memory.WorkingSetBytes != 700 || *rt.Memory.RSSBytes != 600 ||
		*rt.Memory.PageFaults != 7 || *rt.Memory.MajorPageFaults != 1 {
		t.Errorf("runtime: %+v cpu %+v memory %+v", rt, rt.CPU, rt.Memory)
	}
	// The pods cgroup's own faults, not its subtree's (the summary spec bounds them by 1e6 on v1).
	if pods.Name != "pods" || *pods.Memory.WorkingSetBytes != 1500 || *pods.CPU.UsageCoreNanoSeconds != 9 || *pods.Memory.PageFaults != 0 {
		t.Errorf("pods: cpu %+v memory %+v", pods.CPU, pods.Memory)
	}
	// What the limit leaves is available; a cgroup without a limit reports no availableBytes.
	if a := pods.Memory.AvailableBytes; a == nil || *a != 2500 {
		t.Errorf("pods availableBytes %v, want 4000 limit - 1500 working set", a)
	}
	if rt.Memory.AvailableBytes != nil {
		t.Errorf("runtime (no limit) availableBytes %d, want none", *rt.Memory.AvailableBytes)
	}
	// A second sample a few seconds later gives a rate.
	later := now.Add(10 * time.Second)
	writeFiles(t, root, map[string]string{"cgroup/cpu,cpuacct/system.slice/containerd.service/cpuacct.usage": "6000000000\n"})
	again := p.systemContainers(later)
	if r := again[0].CPU.UsageNanoCores; r == nil || *r != 1e8 {
		t.Errorf("runtime usageNanoCores %v, want 1e8 (1s of cpu over 10s)", r)
	}
	if n, ok := p.d.Host.podProcessCount(42); !ok || n != 3 {
		t.Errorf("pod process count %d %v, want 3 from the pod cgroup's pids.current", n, ok)
	}
}

// TestSystemContainersOnCgroupV2WithSystemdSlices reads the unified tree the systemd driver
// lays out: the pods' slice, the runtime's service, and a pod slice's process count.
func TestSystemContainersOnCgroupV2WithSystemdSlices(t *testing.T) {
	root := t.TempDir()
	podSlice := "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poduid1.slice"
	writeFiles(t, root, map[string]string{
		"proc/42/cgroup":            "0::/system.slice/containerd.service\n",
		"proc/43/cgroup":            "0::/" + podSlice + "/cri-containerd-sb.scope\n",
		"cgroup/cgroup.controllers": "cpu memory pids\n",
		"cgroup/system.slice/containerd.service/cpu.stat":       "usage_usec 5000000\n",
		"cgroup/system.slice/containerd.service/memory.current": "1000\n",
		"cgroup/system.slice/containerd.service/memory.stat":    "inactive_file 300\nanon 600\npgfault 7\npgmajfault 1\n",
		"cgroup/system.slice/containerd.service/memory.max":     "max\n",
		"cgroup/kubepods.slice/cpu.stat":                        "usage_usec 9\n",
		"cgroup/kubepods.slice/memory.current":                  "2000\n",
		"cgroup/kubepods.slice/memory.stat":                     "inactive_file 500\npgfault 0\n",
		"cgroup/kubepods.slice/memory.max":                      "4000\n",
		"cgroup/" + podSlice + "/pids.current":                  "3\n",
	})
	now := time.Unix(100, 0)
	p := NewSummaryProvider(Deps{Host: HostPaths{Proc: root + "/proc", Cgroup: root + "/cgroup"}, Now: func() time.Time { return now },
		SystemContainers: func() []SystemContainer {
			return []SystemContainer{{Name: "runtime", PID: 42}, {Name: "pods", Cgroup: "/kubepods.slice"}}
		}})
	got := p.systemContainers(now)
	if len(got) != 2 {
		t.Fatalf("got %d system containers, want runtime and pods: %+v", len(got), got)
	}
	rt, pods := got[0], got[1]
	if *rt.CPU.UsageCoreNanoSeconds != 5e9 || *rt.Memory.WorkingSetBytes != 700 || *rt.Memory.RSSBytes != 600 || rt.Memory.AvailableBytes != nil {
		t.Errorf("runtime: cpu %+v memory %+v", rt.CPU, rt.Memory)
	}
	if *pods.CPU.UsageCoreNanoSeconds != 9000 || *pods.Memory.WorkingSetBytes != 1500 || *pods.Memory.AvailableBytes != 2500 {
		t.Errorf("pods: cpu %+v memory %+v", pods.CPU, pods.Memory)
	}
	if n, ok := p.d.Host.podProcessCount(43); !ok || n != 3 {
		t.Errorf("pod process count %d %v, want 3 from the pod slice's pids.current", n, ok)
	}
}
