package cm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/host/machine"
)

// enforceAllocatable places nodelet and the host's processes (kubeletCgroups,
// systemCgroups) and limits the pods cgroup to node allocatable and the reserved cgroups to
// their reservations, as enforceNodeAllocatable asks. Any failure stops nodelet: a node that
// was told to protect its reservations must not run pods unprotected.
func (m *ContainerManager) enforceAllocatable() error {
	kc := m.cfg
	enforce := kc.EnforceNodeAllocatable
	enforcing := len(enforce) > 0 && !slices.Equal(enforce, []string{"none"})
	placing := kc.KubeletCgroups != "" || kc.SystemCgroups != ""
	if m.pods == nil {
		if enforcing || placing {
			return fmt.Errorf("enforceNodeAllocatable %v, kubeletCgroups and systemCgroups need nodelet's own cgroups (cgroupsPerQOS); set enforceNodeAllocatable to [\"none\"] and leave the others empty otherwise", enforce)
		}
		return nil
	}
	if err := m.placeProcesses(); err != nil {
		return err
	}
	host := kc.Machine
	if host == nil {
		return errors.New("node allocatable: the machine's capacity is unknown")
	}
	capacity := Reservation{MilliCPU: int64(host.CPUs) * 1000, Memory: host.MemoryBytes}
	pods := Reservation{MilliCPU: capacity.MilliCPU} // unenforced: the pods may use the whole node
	if slices.Contains(enforce, "pods") {
		reserved, err := machine.Reserved(kc.KubeReserved, kc.SystemReserved)
		if err != nil {
			return err
		}
		r := ReservationOf(reserved)
		pods = Reservation{MilliCPU: capacity.MilliCPU - r.MilliCPU, Memory: capacity.Memory - r.Memory}
		if r.Pids > 0 {
			pods.Pids = maxPIDs() - r.Pids
		}
	}
	if err := m.pods.LimitPods(pods); err != nil {
		return err
	}
	for _, reserved := range []struct {
		name, cgroup string
		amounts      map[string]string
	}{{"system-reserved", kc.SystemReservedCgroup, kc.SystemReserved}, {"kube-reserved", kc.KubeReservedCgroup, kc.KubeReserved}} {
		full, cpuOnly := slices.Contains(enforce, reserved.name), slices.Contains(enforce, reserved.name+"-compressible")
		if !full && !cpuOnly {
			continue
		}
		if err := m.pods.LimitReserved(reserved.cgroup, ReservationOf(parseReserved(reserved.amounts)), cpuOnly && !full); err != nil {
			return fmt.Errorf("enforcing %s: %w", reserved.name, err)
		}
	}
	return nil
}

// placeProcesses moves nodelet into kubeletCgroups and the host's processes into systemCgroups.
func (m *ContainerManager) placeProcesses() error {
	kc := m.cfg
	if kc.KubeletCgroups != "" {
		if err := m.pods.MoveProcess(kc.KubeletCgroups, os.Getpid()); err != nil {
			return fmt.Errorf("moving nodelet into kubeletCgroups %s: %w", kc.KubeletCgroups, err)
		}
		klog.InfoS("nodelet moved into its cgroup", "kubeletCgroups", kc.KubeletCgroups)
	}
	if kc.SystemCgroups != "" {
		moved, err := m.pods.MoveHostProcesses(kc.SystemCgroups, "/proc")
		if err != nil {
			return fmt.Errorf("moving host processes into systemCgroups %s: %w", kc.SystemCgroups, err)
		}
		klog.InfoS("Host processes moved into the system cgroup", "systemCgroups", kc.SystemCgroups, "processes", moved)
	}
	return nil
}

// parseReserved reads a validated reservation map.
func parseReserved(amounts map[string]string) v1.ResourceList {
	rl := v1.ResourceList{}
	for name, value := range amounts {
		if q, err := resource.ParseQuantity(value); err == nil {
			rl[v1.ResourceName(name)] = q
		}
	}
	return rl
}

// maxPIDs is the kernel's pid_max, the capacity pid reservations come off.
func maxPIDs() int64 {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	var n int64
	fmt.Sscan(string(b), &n)
	return n
}

// System container names, as the summary API names them.
const (
	SystemContainerKubelet = "kubelet"
	SystemContainerRuntime = "runtime"
	SystemContainerPods    = "pods"
	SystemContainerMisc    = "misc"
)

// SystemContainer is a cgroup /stats/summary reports under node.systemContainers: either the
// cgroups a process is in (PID) or one cgroup path in every hierarchy (Cgroup).
type SystemContainer struct {
	Name   string
	PID    int
	Cgroup string
}

// SystemContainers are the cgroups /stats/summary reports for the node: nodelet's own, the
// container runtime's (the oldest containerd process), the pods' and, with systemCgroups,
// the host processes'.
func (m *ContainerManager) SystemContainers() []SystemContainer {
	kc := m.cfg
	out := []SystemContainer{{Name: SystemContainerKubelet, PID: os.Getpid()}}
	if pid := m.runtimePID(); pid > 0 {
		out = append(out, SystemContainer{Name: SystemContainerRuntime, PID: pid})
	}
	if pods := m.PodsCgroup(); pods != "" {
		out = append(out, SystemContainer{Name: SystemContainerPods, Cgroup: pods})
	}
	if kc.SystemCgroups != "" {
		out = append(out, SystemContainer{Name: SystemContainerMisc, Cgroup: kc.SystemCgroups})
	}
	return out
}

// runtimePID finds the runtime's process once and again only when it has gone.
func (m *ContainerManager) runtimePID() int {
	pid := int(m.runtimePid.Load())
	if pid > 0 {
		if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm")); err == nil && strings.TrimSpace(string(b)) == "containerd" {
			return pid
		}
	}
	pid = oldestProcess("/proc", "containerd")
	m.runtimePid.Store(int64(pid))
	return pid
}

// oldestProcess is the lowest pid whose command name is comm, or 0.
func oldestProcess(proc, comm string) int {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0
	}
	best := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || (best != 0 && pid >= best) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(proc, e.Name(), "comm")); err == nil && strings.TrimSpace(string(b)) == comm {
			best = pid
		}
	}
	return best
}
