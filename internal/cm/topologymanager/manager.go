// Package topologymanager aligns what a pod's containers are given (CPUs, memory, devices) on
// the machine's NUMA nodes. At admission it asks every resource manager (a HintProvider) where
// it could place each container's request, merges the answers by the configured policy and
// scope, refuses the pod when the policy cannot be met, and otherwise has every manager set the
// resources aside within the chosen placement, as the upstream kubelet's topology manager does.
package topologymanager

import (
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// The scopes, as the kubelet configuration names them: align each container on its own, or the
// whole pod on one placement.
const (
	ScopeContainer = "container"
	ScopePod       = "pod"
)

// Admission reasons, as upstream reports them.
const (
	ReasonTopologyAffinity = "TopologyAffinityError"
	ReasonUnexpected       = "UnexpectedAdmissionError"
)

// HintProvider is a resource manager the topology manager aligns (CPU, memory, devices).
type HintProvider interface {
	// ContainerHints returns, per resource name, the NUMA placements that could hold c's request.
	// A nil map or a missing resource: no preference. An empty non-nil slice: cannot be satisfied.
	ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topology.Hint
	// PodHints is the same for the pod as a whole (scope pod).
	PodHints(pod *v1.Pod) map[string][]topology.Hint
	// Allocate sets resources aside for c within affinity (zero Mask: anywhere). An error refuses the
	// pod; an error with a `Reason() string` method gives the admission reason (e.g. SMTAlignmentError),
	// otherwise the reason is UnexpectedAdmissionError.
	Allocate(pod *v1.Pod, c *v1.Container, affinity topology.Hint) error
	// RemovePod gives back everything set aside for the pod: it is gone, or it was refused
	// (by this manager, or by a check admission runs after it).
	RemovePod(uid types.UID)
}

// Config is the topology manager's part of the kubelet configuration.
type Config struct {
	Policy  string            // topologyManagerPolicy
	Scope   string            // topologyManagerScope
	Options map[string]string // topologyManagerPolicyOptions
}

// Manager is the topology manager. Admit runs on the sync loop; the readers (Affinity, RemovePod)
// may run anywhere.
type Manager struct {
	cfg    Config
	opts   cmpolicy.TopologyOptions
	policy *policy // nil for policy none: providers allocate without hints

	providers []HintProvider // fixed at New
	mu        sync.Mutex
	affinity  map[types.UID]map[string]topology.Hint // the placement each admitted container got
}

// New builds the manager for the machine over the resource managers it consults. It refuses an
// unknown policy, scope or option, and a policy other than none on a machine with more NUMA
// nodes than max-allowable-numa-nodes. Providers are asked and allocate in their order here;
// upstream's is devices, CPU, memory.
func New(m *topology.Machine, cfg Config, providers ...HintProvider) (*Manager, error) {
	opts, err := cmpolicy.ParseTopologyOptions(cfg.Options)
	if err != nil {
		return nil, err
	}
	if cfg.Scope != ScopeContainer && cfg.Scope != ScopePod {
		return nil, fmt.Errorf("unknown scope: %q", cfg.Scope)
	}
	mgr := &Manager{cfg: cfg, opts: opts, providers: providers, affinity: map[types.UID]map[string]topology.Hint{}}
	switch cfg.Policy {
	case PolicyNone:
		metrics.InitTopologyManager(false)
		return mgr, nil
	case PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode:
	default:
		return nil, fmt.Errorf("unknown policy: %q", cfg.Policy)
	}
	if n := len(m.NUMANodes); n > opts.MaxAllowableNUMANodes {
		return nil, fmt.Errorf("unsupported on machines with more than %v NUMA Nodes", opts.MaxAllowableNUMANodes)
	}
	if opts.PreferClosestNUMA {
		for _, n := range m.NUMANodes {
			if len(n.Distances) == 0 {
				return nil, fmt.Errorf("cannot discover NUMA topology: no distances for NUMA node %d, which %s needs", n.ID, cmpolicy.OptionPreferClosestNUMANodes)
			}
		}
	}
	mgr.policy = newPolicy(cfg.Policy, m, opts)
	metrics.InitTopologyManager(true)
	return mgr, nil
}

// Policy is the configured topologyManagerPolicy.
func (m *Manager) Policy() string { return m.cfg.Policy }

// Scope is the configured topologyManagerScope.
func (m *Manager) Scope() string { return m.cfg.Scope }

// Options are the parsed topologyManagerPolicyOptions.
func (m *Manager) Options() cmpolicy.TopologyOptions { return m.opts }

// Admit aligns and sets aside the pod's resources, walking its init containers and then its app
// containers, or refuses it with upstream's reason and message.
func (m *Manager) Admit(pod *v1.Pod) (ok bool, reason, message string) {
	start := time.Now()
	err := m.admit(pod)
	// As upstream, policy none counts admissions but not their failures.
	metrics.ObserveTopologyAdmission(time.Since(start), err != nil && m.policy != nil)
	if err == nil {
		return true, "", ""
	}
	klog.V(2).InfoS("Topology manager refused the pod", "pod", klog.KObj(pod), "err", err)
	m.Release(pod.UID)
	var withReason interface {
		error
		Reason() string
	}
	if errors.As(err, &withReason) {
		return false, withReason.Reason(), withReason.Error()
	}
	return false, ReasonUnexpected, fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)
}

func (m *Manager) admit(pod *v1.Pod) error {
	providers := m.snapshotProviders()
	containers := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		containers = append(containers, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		containers = append(containers, &pod.Spec.Containers[i])
	}
	if m.policy == nil {
		for _, c := range containers {
			if err := m.allocate(providers, pod, c, topology.Hint{}); err != nil {
				return err
			}
		}
		return nil
	}
	if m.cfg.Scope == ScopePod {
		return m.admitPod(providers, pod, containers)
	}
	for _, c := range containers {
		hints := make([]map[string][]topology.Hint, len(providers))
		for i, p := range providers {
			hints[i] = p.ContainerHints(pod, c)
		}
		best, ok := m.policy.merge(hints)
		klog.V(4).InfoS("Topology hint merged", "pod", klog.KObj(pod), "container", c.Name, "numaNodes", best.NUMANodes.String(), "preferred", best.Preferred, "admit", ok)
		if !ok {
			m.countAlignment(metrics.AlignScopeContainer, true)
			return affinityError{}
		}
		if err := m.allocate(providers, pod, c, best); err != nil {
			return err
		}
		m.countAlignment(metrics.AlignScopeContainer, false)
	}
	return nil
}

// admitPod merges the pod's hints once and places every container on that placement.
func (m *Manager) admitPod(providers []HintProvider, pod *v1.Pod, containers []*v1.Container) error {
	hints := make([]map[string][]topology.Hint, len(providers))
	for i, p := range providers {
		hints[i] = p.PodHints(pod)
	}
	best, ok := m.policy.merge(hints)
	klog.V(4).InfoS("Topology hint merged", "pod", klog.KObj(pod), "numaNodes", best.NUMANodes.String(), "preferred", best.Preferred, "admit", ok)
	if !ok {
		m.countAlignment(metrics.AlignScopePod, true)
		return affinityError{}
	}
	for _, c := range containers {
		if err := m.allocate(providers, pod, c, best); err != nil {
			return err
		}
	}
	m.countAlignment(metrics.AlignScopePod, false)
	return nil
}

// countAlignment counts an aligned (or refused) placement under the one policy that guarantees
// NUMA alignment, as upstream.
func (m *Manager) countAlignment(scope string, failed bool) {
	if m.cfg.Policy == PolicySingleNUMANode {
		metrics.AlignedComputeResources(scope, metrics.AlignedNUMANode, failed)
	}
}

// allocate records c's placement and has every provider set its resources aside there.
func (m *Manager) allocate(providers []HintProvider, pod *v1.Pod, c *v1.Container, affinity topology.Hint) error {
	m.mu.Lock()
	if m.affinity[pod.UID] == nil {
		m.affinity[pod.UID] = map[string]topology.Hint{}
	}
	m.affinity[pod.UID][c.Name] = affinity
	m.mu.Unlock()
	for _, p := range providers {
		if err := p.Allocate(pod, c, affinity); err != nil {
			return err
		}
	}
	return nil
}

// Release forgets a refused pod's placements and has every provider give back what it set
// aside for it: the containers admitted before the one that failed, or the whole pod when a
// check admission runs after this manager refuses it.
func (m *Manager) Release(uid types.UID) {
	m.RemovePod(uid)
	for _, p := range m.snapshotProviders() {
		p.RemovePod(uid)
	}
}

// Affinity returns the placement the container was admitted with; false when the manager has
// none for it (not admitted, removed, or admitted before this start).
func (m *Manager) Affinity(uid types.UID, container string) (topology.Hint, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.affinity[uid][container]
	return h, ok
}

// RemovePod forgets the pod's placements once it is gone.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.affinity, uid)
}

func (m *Manager) snapshotProviders() []HintProvider {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]HintProvider(nil), m.providers...)
}

// affinityError is the refusal when the policy finds no acceptable placement.
type affinityError struct{}

func (affinityError) Error() string  { return "Resources cannot be allocated with Topology locality" }
func (affinityError) Reason() string { return ReasonTopologyAffinity }

// Name names the per-pod state: the pod's NUMA placements.
func (m *Manager) Name() string { return "NUMA placements" }

// ReleasePod forgets the pod's placements (RemovePod).
func (m *Manager) ReleasePod(uid types.UID) error {
	m.RemovePod(uid)
	return nil
}
