package cm

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Reservation is what one cgroup is limited to: cpu weight from milli-CPUs, memory and
// process limits in bytes and processes; zero leaves a setting as it is.
type Reservation struct {
	MilliCPU, Memory, Pids int64
}

// ReservationOf reads cpu, memory and pid amounts from a resource list.
func ReservationOf(rl v1.ResourceList) Reservation {
	var r Reservation
	if q, ok := rl[v1.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		r.Memory = q.Value()
	}
	if q, ok := rl["pid"]; ok {
		r.Pids = q.Value()
	}
	return r
}

func (r Reservation) limits(cpuOnly bool) limits {
	l := limits{}
	if r.MilliCPU > 0 {
		l.cpuShares = milliToShares(r.MilliCPU)
	}
	if cpuOnly {
		return l
	}
	if r.Memory > 0 {
		l.memory = r.Memory
	}
	if r.Pids > 0 {
		l.pids = r.Pids
	}
	return l
}

// LimitPods limits the kubepods cgroup to r (node allocatable: capacity minus kube and
// system reserved). A zero memory lifts an earlier limit, so a nodelet restarted without
// enforcement does not keep the last one's.
func (m *QOSCgroups) LimitPods(r Reservation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := r.limits(false)
	if l.memory == 0 {
		l.memory = unlimited
	}
	if l.pids == 0 {
		l.pids = unlimited
	}
	if err := m.apply(m.qosPath(v1.PodQOSGuaranteed), l); err != nil {
		return fmt.Errorf("limiting %s to node allocatable: %w", m.qosPath(v1.PodQOSGuaranteed), err)
	}
	klog.InfoS("Node allocatable enforced on the pods cgroup", "cgroup", m.qosPath(v1.PodQOSGuaranteed),
		"milliCPU", r.MilliCPU, "memory", r.Memory, "pids", r.Pids)
	return nil
}

// reservedControllers are where a reserved cgroup must exist: the ones its limits and
// accounting use, as upstream checks (a cgroup made without devices or freezer still counts).
var reservedControllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids"}

// LimitReserved limits an existing cgroup (systemReservedCgroup or kubeReservedCgroup) to
// its reservation; cpuOnly is the "-compressible" enforcement. The cgroup must exist in
// the hierarchies of reservedControllers, as upstream requires: nodelet does not place the
// system's processes.
func (m *QOSCgroups) LimitReserved(cgroup string, r Reservation, cpuOnly bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cgroup = path.Clean("/" + cgroup)
	for _, h := range m.create {
		if !slices.ContainsFunc(reservedControllers, h.has) {
			continue
		}
		if _, err := os.Stat(filepath.Join(h.dir, cgroup)); err != nil {
			return fmt.Errorf("reserved cgroup %s does not exist under %s: create it (and place its processes) first", cgroup, h.dir)
		}
	}
	if err := m.apply(cgroup, r.limits(cpuOnly)); err != nil {
		return fmt.Errorf("limiting %s: %w", cgroup, err)
	}
	klog.InfoS("Reservation enforced", "cgroup", cgroup, "milliCPU", r.MilliCPU, "memory", r.Memory, "pids", r.Pids, "cpuOnly", cpuOnly)
	return nil
}

// MoveProcess creates cgroup in every controller's hierarchy and moves the process there (kubeletCgroups
// for nodelet itself).
func (m *QOSCgroups) MoveProcess(cgroup string, pid int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.moveLocked(path.Clean("/"+cgroup), []int{pid}, false)
}

// moveLocked moves pids into cgroup in every hierarchy with a controller nodelet uses. With gone tolerated, a process that
// exited meanwhile is skipped.
func (m *QOSCgroups) moveLocked(cgroup string, pids []int, gone bool) error {
	for _, h := range m.create {
		dir, err := m.ensurePath(h, cgroup)
		if err != nil {
			return err
		}
		for _, pid := range pids {
			err := m.write(dir, "cgroup.procs", strconv.Itoa(pid))
			if err != nil && !(gone && errors.Is(err, syscall.ESRCH)) {
				return err
			}
		}
	}
	return nil
}

// MoveHostProcesses moves the user-space processes of the root cgroup into cgroup
// (systemCgroups). Kernel threads stay: they cannot move and belong to no container.
func (m *QOSCgroups) MoveHostProcesses(cgroup string, proc string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var pids []int
	data, err := m.fs.ReadFile(filepath.Join(m.create[0].dir, "cgroup.procs"))
	if err != nil {
		return 0, err
	}
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid == 1 || kernelThread(proc, pid) {
			continue
		}
		pids = append(pids, pid)
	}
	if err := m.moveLocked(path.Clean("/"+cgroup), pids, true); err != nil {
		return 0, err
	}
	return len(pids), nil
}

// kernelThread: a kernel thread has no executable.
func kernelThread(proc string, pid int) bool {
	_, err := os.Readlink(filepath.Join(proc, strconv.Itoa(pid), "exe"))
	return err != nil
}
