package app

import (
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
)

// readHost reads the machine's facts, once for every component: those that cannot be read are
// logged and left empty.
func readHost() *machine.Machine {
	facts, err := machine.ReadMachine(machine.HostPaths())
	if err != nil {
		klog.ErrorS(err, "Some machine facts are missing from the node status")
	}
	return facts
}

// capacity is the machine's CPUs and memory as the downward API and oom_score_adj weigh them:
// the CPUs this process may run on and MemTotal.
func (n *agent) capacity() downward.Capacity {
	return downward.Capacity{MilliCPU: int64(goruntime.NumCPU()) * 1000, MemoryBytes: n.host.MemoryBytes}
}

// memorySettings are the host facts and settings the runtime shapes containers' memory by
// beyond their limits, read as upstream reads them: the cgroup version, whether the host can
// limit swap, and the machine's memory and swap (of host, read at start).
func memorySettings(cfg *config.Config, host *machine.Machine) (kuberuntime.MemorySettings, error) {
	kc := cfg.Kubelet
	s := kuberuntime.MemorySettings{CgroupV2: cgroupV2(hostFiles.cgroupRoot), SwapBehavior: kc.MemorySwap.SwapBehavior}
	// On v1 an OOM always kills one process; on v2 the whole container unless told otherwise.
	s.OOMGroup = s.CgroupV2 && !ptr.Deref(kc.SingleProcessOOMKill, false)
	if !cfg.NodeSwap {
		s.SwapBehavior = kuberuntime.NoSwap
	}
	s.SwapController = fileExists(swapControllerFile(s.CgroupV2))
	if host == nil || host.MemoryBytes == 0 {
		return s, errors.New("reading the machine's memory: /proc/meminfo gave no MemTotal")
	}
	s.MemoryCapacity, s.SwapCapacity = host.MemoryBytes, host.SwapBytes
	return s, nil
}

// swapControllerFile is the file whose presence says the host can limit swap: v1's memsw
// limit at the root memory cgroup, or v2's memory.swap.max in nodelet's own cgroup (the root
// has none).
func swapControllerFile(v2 bool) string {
	if !v2 {
		return filepath.Join(hostFiles.cgroupRoot, "memory", "memory.memsw.limit_in_bytes")
	}
	data, err := os.ReadFile(hostFiles.selfCgroup)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(hostFiles.cgroupRoot, rest, "memory.swap.max")
		}
	}
	return ""
}

// allocatableMemory is the node's allocatable memory in bytes, which bounds memory-backed
// emptyDirs: the registered Node's, else (standalone, or not registered yet) what upstream's
// initial node would say: the machine's memory less pre-allocated huge pages, kube and system
// reserved and the hard eviction threshold. 0 when it cannot be read.
func (n *agent) allocatableMemory() func() int64 {
	kc := n.cfg.Kubelet
	local := sync.OnceValue(func() int64 {
		host := n.host
		if host == nil || host.MemoryBytes == 0 {
			return 0
		}
		mem := host.MemoryBytes
		for _, bytes := range host.HugePages {
			mem -= bytes
		}
		capacity := v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(host.MemoryBytes, resource.BinarySI)}
		reserved, err := machine.Reservation(capacity, kc.KubeReserved, kc.SystemReserved, kc.EvictionHard)
		if err != nil {
			return 0 // validation refused such settings already
		}
		r := reserved[v1.ResourceMemory]
		return max(0, mem-r.Value())
	})
	api := n.cluster.allocatable()
	return func() int64 {
		if api != nil {
			if q, ok := api()[v1.ResourceMemory]; ok && q.Value() > 0 {
				return q.Value()
			}
		}
		return local()
	}
}
