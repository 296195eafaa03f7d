// Package cpumanager is the CPU manager: under the static policy, containers of Guaranteed
// pods that ask for whole CPUs get CPUs of their own (pinned through the container's cpuset at
// creation), every other container runs on the shared pool, and a reconcile loop keeps running
// containers' cpusets in step as exclusive CPUs come and go. Under the none policy it does
// nothing but keep its state file. Assignments live in <root-dir>/cpu_manager_state in
// upstream's format, so a node can change between nodelet and the kubelet with them intact.
package cpumanager

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// Options configure a Manager.
type Options struct {
	Policy          string                  // cmpolicy.CPUNone or cmpolicy.CPUStatic (cpuManagerPolicy)
	PolicyOptions   map[string]string       // cpuManagerPolicyOptions
	OptionGates     cmpolicy.CPUOptionGates // which of those options' stages are allowed
	ReconcilePeriod time.Duration           // cpuManagerReconcilePeriod
	Machine         *topology.Machine
	// ReservedCPUs are reservedSystemCPUs; when empty, NumReserved CPUs (the kube- and
	// system-reserved cpu, rounded up) are chosen by topology.
	ReservedCPUs cpuset.CPUSet
	NumReserved  int
	StateDir     string // where cpu_manager_state is kept: the root directory

	// ActivePods are the pods whose containers may hold CPUs (known, not finished); the
	// reconcile loop releases the CPUs of any other. SourcesReady says every pod source has
	// been seen, so the list is whole.
	ActivePods   func() []*v1.Pod
	SourcesReady func() bool
	// PodStatus gives a pod's container IDs and states, to find its running containers.
	PodStatus func(uid types.UID) (v1.PodStatus, bool)
	// SetContainerCPUs pins a running container to cpus (CRI UpdateContainerResources).
	SetContainerCPUs func(ctx context.Context, containerID string, cpus cpuset.CPUSet) error
}

// Manager is the CPU manager.
type Manager struct {
	opts   Options
	static *static // nil under the none policy

	mu    sync.Mutex
	state state
	// applied is the cpuset the reconcile loop last set on each running container, by pod UID
	// and container name.
	applied assignments
	// missing are the pods holding CPUs that the last reconcile pass found inactive: released
	// at the next pass if still so, so a pod its source sent but the sync loop has not yet
	// taken in (at a restart) keeps its CPUs.
	missing map[string]bool
}

// New builds the manager and restores its state, checking it against the machine: a state of
// another policy or one that no longer fits refuses the start, as upstream.
func New(opts Options) (*Manager, error) {
	popts, err := cmpolicy.ParseCPUOptions(opts.Policy, opts.PolicyOptions, opts.OptionGates)
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, applied: assignments{}, missing: map[string]bool{}}
	switch opts.Policy {
	case cmpolicy.CPUNone:
	case cmpolicy.CPUStatic:
		if opts.NumReserved == 0 && opts.ReservedCPUs.IsEmpty() {
			return nil, fmt.Errorf("[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero")
		}
		if m.static, err = newStatic(opts.Machine, opts.NumReserved, opts.ReservedCPUs, popts); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown policy: %q", opts.Policy)
	}
	if m.state, err = restore(opts.StateDir, opts.Policy); err != nil {
		return nil, fmt.Errorf("start cpu manager error: %w", err)
	}
	if m.static != nil {
		if err := m.static.start(&m.state); err != nil {
			return nil, fmt.Errorf("start cpu manager error: %w, please drain node and remove policy state file", err)
		}
		if err := m.save(); err != nil {
			return nil, err
		}
		metrics.InitCPUManager()
		m.publishPools()
	}
	klog.InfoS("CPU manager started", "policy", opts.Policy, "defaultCPUSet", m.state.defaultSet.String())
	return m, nil
}

// Policy is the configured policy's name.
func (m *Manager) Policy() string { return m.opts.Policy }

// save writes the state file; the caller holds mu (or is New).
func (m *Manager) save() error {
	if err := store(m.opts.StateDir, m.opts.Policy, m.state); err != nil {
		return fmt.Errorf("saving CPU manager state: %w", err)
	}
	return nil
}

// ContainerHints are the NUMA placements that could hold c's exclusive CPUs (nil: no
// preference, as for every container under the none policy).
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topology.Hint {
	if m.static == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.static.containerHints(&m.state, pod, c)
}

// PodHints are the NUMA placements that could hold the pod's exclusive CPUs.
func (m *Manager) PodHints(pod *v1.Pod) map[string][]topology.Hint {
	if m.static == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.static.podHints(&m.state, pod)
}

// Allocate sets exclusive CPUs aside for c, within affinity's NUMA nodes where it can. An
// error refuses the pod: a Guaranteed container never runs on shared CPUs instead.
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container, affinity topology.Hint) error {
	if m.static == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, had := m.state.assigned.get(string(pod.UID), c.Name)
	if err := m.static.allocate(&m.state, pod, c, affinity.NUMANodes); err != nil {
		klog.ErrorS(err, "Unable to allocate CPUs", "pod", klog.KObj(pod), "containerName", c.Name)
		return err
	}
	if _, has := m.state.assigned.get(string(pod.UID), c.Name); had || !has {
		return nil
	}
	m.publishPools()
	return m.save()
}

// RemovePod releases every CPU the pod's containers hold.
func (m *Manager) RemovePod(uid types.UID) {
	if m.static == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releasePod(string(uid))
}

func (m *Manager) releasePod(uid string) {
	containers := m.state.assigned[uid]
	if len(containers) == 0 {
		return
	}
	for name := range containers {
		m.static.release(&m.state, uid, name)
	}
	m.publishPools()
	delete(m.applied, uid)
	if err := m.save(); err != nil {
		klog.ErrorS(err, "Failed to store CPU manager state", "podUID", uid)
	}
}

// ContainerCPUs are the CPUs c holds exclusively (empty when it runs on the shared pool).
func (m *Manager) ContainerCPUs(podUID types.UID, container string) cpuset.CPUSet {
	m.mu.Lock()
	defer m.mu.Unlock()
	cpus, _ := m.state.assigned.get(string(podUID), container)
	return cpus
}

// PodHasExclusiveCPUs tells whether any of the pod's containers holds exclusive CPUs.
func (m *Manager) PodHasExclusiveCPUs(pod *v1.Pod) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range allContainers(pod) {
		if cpus, _ := m.state.assigned.get(string(pod.UID), c.Name); !cpus.IsEmpty() {
			return true
		}
	}
	return false
}

// AllocatableCPUs are the CPUs that can be given exclusively (none under the none policy).
func (m *Manager) AllocatableCPUs() cpuset.CPUSet {
	if m.static == nil {
		return cpuset.New()
	}
	return m.static.allocatable()
}

// SharedCPUs is the shared pool now (empty under the none policy: the runtime's default).
func (m *Manager) SharedCPUs() cpuset.CPUSet {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.defaultSet
}

// ContainerCpuset is the cpuset a new container is created with ("" leaves the runtime's
// default): its exclusive CPUs, else the shared pool.
func (m *Manager) ContainerCpuset(pod *v1.Pod, c *v1.Container) string {
	if m.static == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cpus, ok := m.state.assigned.get(string(pod.UID), c.Name)
	if !ok {
		cpus = m.state.defaultSet
	}
	return cpus.String()
}

// Name names the per-pod state: the pod's exclusive CPUs.
func (m *Manager) Name() string { return "CPUs" }

// ReleasePod gives the pod's CPUs back to the shared pool (RemovePod).
func (m *Manager) ReleasePod(uid types.UID) error {
	m.RemovePod(uid)
	return nil
}
