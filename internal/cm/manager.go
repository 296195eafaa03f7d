package cm

// The pod cgroup tree: with the cgroupfs driver <cgroupRoot>/kubepods for Guaranteed pods,
// kubepods/burstable and kubepods/besteffort for the other QoS classes, and one pod<uid>
// cgroup per pod carrying the pod's summed limits (systemd.go names them as slices). The container runtime puts the pod's
// containers under the pod cgroup it is given as cgroup parent. Both cgroup v1 (one tree per
// controller, as on hybrid hosts) and the v2 unified tree are handled.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/qos"
)

// Names of the QoS cgroups, as the Kubernetes conformance tests expect them.
const (
	kubepodsName   = "kubepods"
	burstableName  = "burstable"
	besteffortName = "besteffort"
	podPrefix      = "pod"
)

// Options configure a QOSCgroups.
type Options struct {
	// Root is where the cgroup hierarchies are mounted (default /sys/fs/cgroup).
	Root string
	// CgroupRoot is the cgroup kubepods is made under (default "/").
	CgroupRoot string
	// PodPidsLimit caps each pod's process count; zero or less leaves it unlimited.
	PodPidsLimit int64
	// NodeMilliCPU sizes kubepods' cpu weight against the host's other cgroups; zero
	// leaves the kernel's default.
	NodeMilliCPU int64
	// NoCPUQuota leaves pod cgroups without a CFS quota (cpuCFSQuota: false): CPU limits
	// then only weigh through shares.
	NoCPUQuota bool
	// ExclusiveCPUs tells whether the CPU manager gave one of the pod's containers CPUs of its
	// own: that pod's cgroup gets no CFS quota, as upstream with DisableCPUQuotaWithExclusiveCPUs.
	// nil (that gate off, or no CPU manager) enforces every pod's CPU limit.
	ExclusiveCPUs func(pod *v1.Pod) bool

	fs      filesystem   // nil is the kernel's cgroupfs; tests substitute a fake
	systemd systemdUnits // set for the systemd driver: cgroups are slices systemd makes
	// systemdCtx is nodelet's run context, which the systemd driver's calls derive from; set
	// with systemd.
	systemdCtx context.Context
}

// QOSCgroups creates and removes the QoS and pod cgroups. It is safe for concurrent use.
type QOSCgroups struct {
	root       string
	cgroupRoot string
	pidsLimit  int64
	nodeShares int64
	noQuota    bool
	exclusive  func(pod *v1.Pod) bool // see Options.ExclusiveCPUs
	fs         filesystem
	systemd    systemdUnits // nil for the cgroupfs driver
	systemdCtx context.Context
	create     []hierarchy // where cgroups are made and limits written
	all        []hierarchy // where pod cgroups are removed from

	mu       sync.Mutex
	suspects map[types.UID]bool // orphan candidates from the last sweep
}

// New finds the mounted cgroup hierarchies. It fails when the controllers pod cgroups need
// are not mounted; it does not write anything.
func NewQOSCgroups(opts Options) (*QOSCgroups, error) {
	if opts.Root == "" {
		opts.Root = "/sys/fs/cgroup"
	}
	if opts.CgroupRoot == "" {
		opts.CgroupRoot = "/"
	}
	if opts.fs == nil {
		opts.fs = cgroupFS{}
	}
	if opts.systemd != nil && path.Clean("/"+opts.CgroupRoot) != "/" {
		return nil, fmt.Errorf("cgroupRoot %s with cgroupDriver systemd: nodelet makes kubepods.slice at the root only", opts.CgroupRoot)
	}
	create, all, err := discover(opts.Root)
	if err != nil {
		return nil, err
	}
	m := &QOSCgroups{
		root: opts.Root, cgroupRoot: path.Clean("/" + opts.CgroupRoot), pidsLimit: opts.PodPidsLimit, noQuota: opts.NoCPUQuota, exclusive: opts.ExclusiveCPUs, fs: opts.fs, systemd: opts.systemd, systemdCtx: opts.systemdCtx,
		create: create, all: all, suspects: map[types.UID]bool{},
	}
	if opts.NodeMilliCPU > 0 {
		m.nodeShares = milliToShares(opts.NodeMilliCPU)
	}
	return m, nil
}

// Start creates kubepods and its burstable and besteffort children in every hierarchy and
// sets their cpu weights: the node's cpus for kubepods, the least possible for besteffort,
// and the burstable pods' summed requests for burstable.
func (m *QOSCgroups) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if err := m.ensure(m.qosPath(class)); err != nil {
			return err
		}
		// As upstream makes them in every v1 hierarchy, name=systemd included (where its
		// existence check looks); runc makes the pods' own paths there.
		for _, h := range m.named() {
			if m.systemd != nil {
				break // systemd makes its slices there itself
			}
			if _, err := m.ensurePath(h, m.qosPath(class)); err != nil {
				return err
			}
		}
	}
	if err := m.apply(m.qosPath(v1.PodQOSGuaranteed), limits{cpuShares: m.nodeShares}); err != nil {
		return err
	}
	if err := m.apply(m.qosPath(v1.PodQOSBestEffort), limits{cpuShares: minShares}); err != nil {
		return err
	}
	if err := m.updateBurstableShares(); err != nil {
		return err
	}
	klog.InfoS("QoS cgroups in place", "root", m.root, "cgroupRoot", m.cgroupRoot, "v2", m.create[0].v2, "hierarchies", len(m.create))
	return nil
}

// EnsurePod creates the pod's cgroup, writes its limits, and returns the cgroup parent to
// hand to the runtime, e.g. /kubepods/burstable/pod<uid>. Calling it again rewrites the
// limits.
func (m *QOSCgroups) EnsurePod(pod *v1.Pod) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	class := qos.Class(pod)
	cgroup := path.Join(m.qosPath(class), m.podName(class, pod.UID))
	if err := m.ensure(cgroup); err != nil {
		return "", err
	}
	if err := m.apply(cgroup, podLimits(pod, m.pidsLimit, m.enforceQuota(pod))); err != nil {
		return "", err
	}
	if class == v1.PodQOSBurstable {
		if err := m.updateBurstableShares(); err != nil {
			klog.ErrorS(err, "Could not update the burstable cgroup's cpu weight", "pod", klog.KObj(pod))
		}
	}
	klog.V(4).InfoS("Pod cgroup ready", "pod", klog.KObj(pod), "cgroup", cgroup)
	if m.systemd != nil {
		return path.Base(cgroup), nil // the runtime's systemd driver takes the slice's name
	}
	return cgroup, nil
}

// enforceQuota tells whether the pod's CPU limit becomes a CFS quota on its cgroup: with
// cpuCFSQuota, unless one of its containers holds exclusive CPUs and ExclusiveCPUs says so.
func (m *QOSCgroups) enforceQuota(pod *v1.Pod) bool {
	if m.noQuota {
		return false
	}
	if m.exclusive != nil && m.exclusive(pod) {
		klog.V(2).InfoS("Disabled CFS quota", "pod", klog.KObj(pod))
		return false
	}
	return true
}

// RemovePod removes the pod's cgroup, wherever it is, from every hierarchy. It fails (with
// EBUSY inside) while processes remain in it; the caller retries later.
func (m *QOSCgroups) RemovePod(uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	wasBurstable := false
	for _, h := range m.all {
		for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
			cgroup := path.Join(m.qosPath(class), m.podName(class, uid))
			dir := filepath.Join(h.dir, cgroup)
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			wasBurstable = wasBurstable || class == v1.PodQOSBurstable
			if m.systemd != nil {
				if err := m.stopSlice(cgroup); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if err := m.removeTree(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pod %s cgroup: %w", uid, err)
	}
	if wasBurstable {
		if err := m.updateBurstableShares(); err != nil {
			klog.ErrorS(err, "Could not update the burstable cgroup's cpu weight", "podUID", uid)
		}
	}
	klog.V(4).InfoS("Removed pod cgroup", "podUID", uid)
	return nil
}

// qosPath is the cgroup path of a QoS class's parent cgroup.
func (m *QOSCgroups) qosPath(class v1.PodQOSClass) string {
	if m.systemd != nil {
		if class == v1.PodQOSGuaranteed {
			return "/" + sliceOf(class)
		}
		return path.Join("/", sliceOf(v1.PodQOSGuaranteed), sliceOf(class))
	}
	switch class {
	case v1.PodQOSBurstable:
		return path.Join(m.cgroupRoot, kubepodsName, burstableName)
	case v1.PodQOSBestEffort:
		return path.Join(m.cgroupRoot, kubepodsName, besteffortName)
	}
	return path.Join(m.cgroupRoot, kubepodsName)
}

// ensure makes the cgroup at path in every hierarchy pod cgroups are made in.
func (m *QOSCgroups) ensure(cgroup string) error {
	if m.systemd != nil {
		return m.ensureSlices(cgroup)
	}
	for _, h := range m.create {
		if _, err := m.ensurePath(h, cgroup); err != nil {
			return err
		}
	}
	return nil
}

// updateBurstableShares sets the burstable cgroup's cpu weight to the sum of its pods'
// weights, so burstable pods together weigh what they requested against guaranteed ones.
// The pod cgroups themselves are the record, which survives restarts.
func (m *QOSCgroups) updateBurstableShares() error {
	h, ok := m.cpuHierarchy()
	if !ok {
		return nil
	}
	dir := filepath.Join(h.dir, m.qosPath(v1.PodQOSBurstable))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var total int64
	for _, e := range entries {
		if _, ok := m.podUID(v1.PodQOSBurstable, e.Name()); !ok || !e.IsDir() {
			continue
		}
		shares, err := m.readShares(h, filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		total += shares
	}
	return m.apply(m.qosPath(v1.PodQOSBurstable), limits{cpuShares: min(maxShares, max(minShares, total))})
}

// named are the v1 hierarchies with no controller (name=systemd): only directories go there.
func (m *QOSCgroups) named() []hierarchy {
	var out []hierarchy
	for _, h := range m.all {
		if !h.v2 && len(h.controllers) == 0 {
			out = append(out, h)
		}
	}
	return out
}

func (m *QOSCgroups) cpuHierarchy() (hierarchy, bool) { return m.hierarchyWith("cpu") }

// hierarchyWith is the first tree pod cgroups are made in that has controller.
func (m *QOSCgroups) hierarchyWith(controller string) (hierarchy, bool) {
	for _, h := range m.create {
		if h.has(controller) {
			return h, true
		}
	}
	return hierarchy{}, false
}

// MemoryDirs are the cgroup v1 memory directories of the host's root cgroup and of kubepods,
// where memory thresholds are registered with the kernel (cgroup.event_control). cgroup v2
// has no such interface: it is an error there.
func (m *QOSCgroups) MemoryDirs() (root, pods string, err error) {
	if h, ok := m.hierarchyWith("memory"); ok && !h.v2 {
		return h.dir, filepath.Join(h.dir, m.qosPath(v1.PodQOSGuaranteed)), nil
	}
	return "", "", errors.New("memory threshold notification needs cgroup v1's memory controller (cgroup.event_control); this host has none")
}
