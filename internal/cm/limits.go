package cm

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"

	"github.com/nodelet/nodelet/internal/host/hugepages"
	"github.com/nodelet/nodelet/internal/podspec/qos"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

const (
	minShares    = 2
	maxShares    = 262144
	sharesPerCPU = 1024
	quotaPeriod  = 100000 // µs
	minQuota     = 1000   // µs, the kernel's floor
	unlimited    = -1
)

// limits are the settings of one cgroup. A zero field is left as the kernel has it;
// unlimited (-1) lifts a limit.
type limits struct {
	cpuShares int64
	cpuQuota  int64 // µs per quotaPeriod
	memory    int64 // bytes
	pids      int64
	hugePages []hugepages.Limit // written where the hugetlb controller is
}

// podLimits sizes a pod's cgroup: cpu weight from its cpu request, a cpu quota (when quotas
// are enforced) and a memory limit only when every container is limited (one unlimited
// container makes the pod unlimited), the node-wide pod pids limit, and as upstream the huge
// pages it requests (every other page size limited to 0).
func podLimits(pod *v1.Pod, pidsLimit int64, cpuQuota bool) limits {
	l := limits{cpuShares: minShares, cpuQuota: unlimited, memory: unlimited, pids: unlimited}
	if qos.Class(pod) != v1.PodQOSBestEffort {
		milli, _ := podAmount(pod, v1.ResourceCPU, requested, milliValue)
		l.cpuShares = milliToShares(milli)
	}
	if milli, ok := podAmount(pod, v1.ResourceCPU, limited, milliValue); ok && cpuQuota {
		l.cpuQuota = max(minQuota, milli*quotaPeriod/1000)
	}
	if bytes, ok := PodMemoryLimit(pod); ok {
		l.memory = bytes
	}
	if pidsLimit > 0 {
		l.pids = pidsLimit
	}
	l.hugePages = hugepages.Limits(podHugePages(pod))
	return l
}

// PodMemoryLimit is the memory limit of the pod's cgroup, its overhead included; ok is false
// when some container has no memory limit (then the pod has none).
func PodMemoryLimit(pod *v1.Pod) (bytes int64, ok bool) {
	return podAmount(pod, v1.ResourceMemory, limited, value)
}

// podHugePages is what the pod requests of each huge page size.
func podHugePages(pod *v1.Pod) v1.ResourceList {
	out := v1.ResourceList{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, rl := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name := range rl {
					if _, ok := hugepages.CgroupSize(name); ok {
						bytes, _ := podAmount(pod, name, requested, value)
						out[name] = *resource.NewQuantity(bytes, resource.BinarySI)
					}
				}
			}
		}
	}
	return out
}

func milliValue(q resource.Quantity) int64 { return q.MilliValue() }
func value(q resource.Quantity) int64      { return q.Value() }

func milliToShares(milli int64) int64 {
	return min(maxShares, max(minShares, milli*sharesPerCPU/1000))
}

// side picks a container's requests or its limits.
type side int

const (
	requested side = iota
	limited
)

// of is the container's amount of name; a missing request defaults to the limit, as the API
// server does.
func (s side) of(c *v1.Container, name v1.ResourceName) (resource.Quantity, bool) {
	if s == requested {
		if q, ok := c.Resources.Requests[name]; ok {
			return q, true
		}
	}
	q, ok := c.Resources.Limits[name]
	return q, ok && !q.IsZero()
}

func (s side) podLevel(r *v1.ResourceRequirements) v1.ResourceList {
	if s == requested {
		return r.Requests
	}
	return r.Limits
}

// podAmount is what the pod as a whole needs of name, its RuntimeClass's overhead
// included: pod-level resources when set, else what runs at once at most (sidecar.Fold).
// ok is false when some container does not set the amount.
func podAmount(pod *v1.Pod, name v1.ResourceName, s side, conv func(resource.Quantity) int64) (int64, bool) {
	amount, ok := containersAmount(pod, name, s, conv)
	if q, set := pod.Spec.Overhead[name]; set {
		amount += conv(q)
	}
	return amount, ok
}

func containersAmount(pod *v1.Pod, name v1.ResourceName, s side, conv func(resource.Quantity) int64) (int64, bool) {
	if pod.Spec.Resources != nil {
		if q, ok := s.podLevel(pod.Spec.Resources)[name]; ok {
			return conv(q), true
		}
	}
	all := true
	folded := sidecar.Fold(pod, func(c *v1.Container) v1.ResourceList {
		q, ok := s.of(c, name)
		if !ok {
			all = false
			return nil
		}
		return v1.ResourceList{name: q}
	})
	return conv(folded[name]), all
}

// apply writes l to the cgroup at path (relative to a hierarchy's mount) through runc's
// cgroup library: its v1 (fs) driver over every v1 hierarchy pod cgroups are made in, or its
// v2 (fs2) driver on the unified tree.
func (m *QOSCgroups) apply(path string, l limits) error {
	if m.systemd != nil {
		if err := m.setSliceProperties(path, l); err != nil {
			return err
		}
	}
	if m.create[0].v2 {
		dir := filepath.Join(m.create[0].dir, path)
		if !m.controllerIn(dir, "hugetlb") {
			l.hugePages = nil
		}
		res := l.resources(true)
		mgr, err := fs2.NewManager(&cgroups.Cgroup{Resources: res}, dir)
		if err == nil {
			err = mgr.Set(res)
		}
		return wrapSet(dir, err)
	}
	paths := map[string]string{}
	for _, h := range m.create {
		for c := range h.controllers {
			paths[c] = filepath.Join(h.dir, path)
		}
	}
	if paths["hugetlb"] == "" {
		l.hugePages = nil // no hugetlb hierarchy: nothing to limit, as upstream
	}
	res := l.resources(false)
	mgr, err := fs.NewManager(&cgroups.Cgroup{Resources: res}, paths)
	if err == nil {
		err = mgr.Set(res)
	}
	return wrapSet(path, err)
}

func wrapSet(cgroup string, err error) error {
	if err != nil {
		return fmt.Errorf("setting the limits of %s: %w", cgroup, err)
	}
	return nil
}

// resources are l as the library takes them: cpu weight as v1 shares or v2 weight, and
// devices left alone (a pod cgroup's devices are the runtime's to set per container).
func (l limits) resources(v2 bool) *cgroups.Resources {
	r := &cgroups.Resources{SkipDevices: true, Memory: l.memory}
	if l.cpuShares != 0 {
		if v2 {
			r.CpuWeight = uint64(sharesToWeight(l.cpuShares))
		} else {
			r.CpuShares = uint64(l.cpuShares)
		}
	}
	if l.cpuQuota != 0 {
		r.CpuQuota, r.CpuPeriod = l.cpuQuota, quotaPeriod
	}
	if l.pids != 0 {
		r.PidsLimit = ptr.To(l.pids)
	}
	for _, h := range l.hugePages {
		r.HugetlbLimit = append(r.HugetlbLimit, &cgroups.HugepageLimit{Pagesize: h.PageSize, Limit: h.Bytes})
	}
	return r
}

// controllerIn says whether the v2 cgroup at dir has controller.
func (m *QOSCgroups) controllerIn(dir, controller string) bool {
	data, err := m.fs.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	return err == nil && slices.Contains(strings.Fields(string(data)), controller)
}

// sharesToWeight maps v1 cpu.shares [2, 262144] linearly onto v2 cpu.weight [1, 10000].
func sharesToWeight(shares int64) int64 {
	return 1 + (shares-minShares)*9999/(maxShares-minShares)
}

// weightToShares inverts sharesToWeight, rounding up so that the round trip is exact.
func weightToShares(weight int64) int64 {
	return minShares + ((weight-1)*(maxShares-minShares)+9998)/9999
}

// readShares reads the cpu weight of the cgroup at dir as v1 shares.
func (m *QOSCgroups) readShares(h hierarchy, dir string) (int64, error) {
	file := "cpu.shares"
	if h.v2 {
		file = "cpu.weight"
	}
	data, err := m.fs.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, err
	}
	if h.v2 {
		return weightToShares(n), nil
	}
	return n, nil
}
