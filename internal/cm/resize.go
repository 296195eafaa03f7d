package cm

import (
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/qos"
)

// PodConfig is what a pod cgroup says of cpu and memory, for an in-place resize: the cpu
// weight in v1 shares, the cpu quota in µs per 100ms period and the memory limit in bytes,
// -1 meaning none. In SetPodConfig a zero field is left as it is.
type PodConfig struct {
	CPUShares int64
	CPUQuota  int64
	Memory    int64
}

// unlimitedV1Memory: a v1 memory.limit_in_bytes at or above this is no limit (the kernel
// reports the page-rounded maximum).
const unlimitedV1Memory = int64(1) << 62

// PodConfig returns the pod cgroup's current cpu and memory settings, and those pod (its
// allocated resources) asks for.
func (m *QOSCgroups) PodConfig(pod *v1.Pod) (current, desired PodConfig, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := podLimits(pod, m.pidsLimit, m.enforceQuota(pod))
	desired = PodConfig{CPUShares: want.cpuShares, CPUQuota: want.cpuQuota, Memory: want.memory}
	cgroup := m.podPath(pod)
	if current.CPUShares, current.CPUQuota, err = m.readCPU(cgroup); err != nil {
		return current, desired, fmt.Errorf("pod %s cgroup cpu: %w", pod.UID, err)
	}
	if current.Memory, err = m.readMemory(cgroup, "memory.limit_in_bytes", "memory.max"); err != nil {
		return current, desired, fmt.Errorf("pod %s cgroup memory: %w", pod.UID, err)
	}
	return current, desired, nil
}

// SetPodConfig writes c's non-zero fields to the pod cgroup. A changed weight of a burstable
// pod is passed on to the burstable cgroup.
func (m *QOSCgroups) SetPodConfig(pod *v1.Pod, c PodConfig) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := limits{cpuShares: c.CPUShares, cpuQuota: c.CPUQuota, memory: c.Memory}
	if err := m.apply(m.podPath(pod), l); err != nil {
		return fmt.Errorf("pod %s cgroup: %w", pod.UID, err)
	}
	if c.CPUShares != 0 && qos.Class(pod) == v1.PodQOSBurstable {
		if err := m.updateBurstableShares(); err != nil {
			klog.ErrorS(err, "Could not update the burstable cgroup's cpu weight", "pod", klog.KObj(pod))
		}
	}
	return nil
}

// PodMemoryUsage returns the memory the pod's cgroup uses now, in bytes.
func (m *QOSCgroups) PodMemoryUsage(pod *v1.Pod) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.readMemory(m.podPath(pod), "memory.usage_in_bytes", "memory.current")
	if err != nil {
		return 0, fmt.Errorf("pod %s cgroup memory usage: %w", pod.UID, err)
	}
	return n, nil
}

func (m *QOSCgroups) podPath(pod *v1.Pod) string {
	class := qos.Class(pod)
	return path.Join(m.qosPath(class), m.podName(class, pod.UID))
}

// readCPU reads the cgroup's weight (as v1 shares) and quota (-1 for none).
func (m *QOSCgroups) readCPU(cgroup string) (shares, quota int64, err error) {
	h, ok := m.cpuHierarchy()
	if !ok {
		return 0, 0, fmt.Errorf("no cpu controller mounted")
	}
	dir := filepath.Join(h.dir, cgroup)
	if shares, err = m.readShares(h, dir); err != nil {
		return 0, 0, err
	}
	if !h.v2 {
		quota, err = m.readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
		return shares, quota, err
	}
	data, err := m.fs.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return 0, 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 || fields[0] == "max" {
		return shares, unlimited, nil
	}
	quota, err = strconv.ParseInt(fields[0], 10, 64)
	return shares, quota, err
}

// readMemory reads a memory file, v1's name or v2's, with "max" or v1's maximum as -1.
func (m *QOSCgroups) readMemory(cgroup, v1File, v2File string) (int64, error) {
	h, ok := m.hierarchyWith("memory")
	if !ok {
		return 0, fmt.Errorf("no memory controller mounted")
	}
	file := v1File
	if h.v2 {
		file = v2File
	}
	n, err := m.readInt(filepath.Join(h.dir, cgroup, file))
	if err != nil {
		return 0, err
	}
	if n >= unlimitedV1Memory {
		return unlimited, nil
	}
	return n, nil
}

func (m *QOSCgroups) readInt(file string) (int64, error) {
	data, err := m.fs.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return unlimited, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
