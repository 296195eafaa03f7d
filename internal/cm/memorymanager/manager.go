// Package memorymanager is the memory manager: with the Static policy, the containers of
// Guaranteed pods get their memory set aside on the fewest NUMA nodes that hold it and are
// pinned there (cpuset.mems); a pod whose memory no NUMA nodes can hold is refused. Its state
// is the upstream kubelet's memory_manager_state file, so a node can change kubelets with its
// assignments kept. Policy None does nothing but keep the file, as upstream.
package memorymanager

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/podspec/qos"
)

// Policy names, as memoryManagerPolicy spells them.
const (
	PolicyNone   = kubeletconfigv1beta1.NoneMemoryManagerPolicy
	PolicyStatic = kubeletconfigv1beta1.StaticMemoryManagerPolicy
)

// Options configure the memory manager.
type Options struct {
	Policy string // PolicyNone or PolicyStatic
	// Nodes are the machine's NUMA nodes and their memory.
	Nodes []NUMAMemory
	// Reserved is reservedMemory; NodeReservation what node allocatable holds back (kube and
	// system reserved plus the hard eviction threshold), which Reserved must add up to.
	Reserved        []kubeletconfigv1beta1.MemoryReservation
	NodeReservation v1.ResourceList
	// StateDir holds the state file (the root directory).
	StateDir string
}

// Manager is the memory manager. Its methods are safe for concurrent use.
type Manager struct {
	policy string
	dir    string

	mu     sync.Mutex
	static *static // nil with policy None
	// inactive are the pods the last RemoveInactive found without an active pod.
	inactive map[string]bool
}

// New reads the state file (refusing a corrupt one, or one written under another policy, as
// upstream), checks it against the machine and reservedMemory, and writes it back.
func New(opts Options) (*Manager, error) {
	m := &Manager{policy: opts.Policy, dir: opts.StateDir}
	switch opts.Policy {
	case PolicyNone:
	case PolicyStatic:
		if err := m.startStatic(opts); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("memoryManagerPolicy: unknown policy %q (known: %s, %s)", opts.Policy, PolicyNone, PolicyStatic)
	}
	f, found, err := readState(opts.StateDir, opts.Policy)
	if err != nil {
		return nil, err
	}
	if m.static != nil && found {
		if err := m.static.restore(f); err != nil {
			return nil, fmt.Errorf("memory manager: %w; drain the node and remove %s/%s to start from an empty state", err, opts.StateDir, StateFile)
		}
	}
	if err := m.save(); err != nil {
		return nil, fmt.Errorf("memory manager: writing its state: %w", err)
	}
	klog.InfoS("Memory manager started", "policy", opts.Policy, "restoredState", found)
	return m, nil
}

func (m *Manager) startStatic(opts Options) error {
	reserved, err := reservedPerNode(opts.Nodes, opts.Reserved, opts.NodeReservation)
	if err != nil {
		return err
	}
	empty, err := emptyMachine(opts.Nodes, reserved)
	if err != nil {
		return err
	}
	m.static = &static{machine: empty.clone(), entries: assignments{}, initial: empty}
	return nil
}

// restore takes a state file's assignments when its machine state is what they should have
// left on this machine; an empty one (none written yet) is taken as the machine's.
func (s *static) restore(f *stateFile) error {
	if len(f.MachineState) == 0 {
		if len(f.Entries) != 0 {
			return errNoState
		}
		return nil
	}
	want, err := expectedMachine(s.initial, f.Entries)
	if err != nil {
		return err
	}
	if !sameMachine(f.MachineState, want) {
		return fmt.Errorf("[memorymanager] the expected machine state is different from the real one (the node's memory, reservedMemory or the reserved amounts changed)")
	}
	s.machine, s.entries = f.MachineState, f.Entries
	return nil
}

// save writes the state file; the manager's lock is held (or it is not shared yet).
func (m *Manager) save() error {
	machine, entries := numaNodeMap{}, assignments{}
	if m.static != nil {
		machine, entries = m.static.machine, m.static.entries
	}
	return writeState(m.dir, m.policy, machine, entries)
}

// saveOrLog writes the state after a change; a failure leaves the change in memory (the next
// change writes it again), as upstream.
func (m *Manager) saveOrLog() {
	if err := m.save(); err != nil {
		klog.ErrorS(err, "Could not write the memory manager state")
	}
}

// Policy is the policy in force.
func (m *Manager) Policy() string { return m.policy }

// ContainerHints returns the NUMA placements that could hold c's memory (nil: no preference).
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topology.Hint {
	if m.static == nil || qos.Class(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	req, err := containerRequests(c)
	if err != nil {
		klog.ErrorS(err, "Memory hints", "pod", klog.KObj(pod), "container", c.Name)
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if blocks := m.static.entries.get(string(pod.UID), c.Name); blocks != nil {
		return hintsOf(blocks, req) // placed before nodelet restarted: the same again
	}
	return m.static.hints(string(pod.UID), req)
}

// PodHints returns the NUMA placements that could hold the whole pod's memory.
func (m *Manager) PodHints(pod *v1.Pod) map[string][]topology.Hint {
	if m.static == nil || qos.Class(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	req, err := podRequests(pod)
	if err != nil {
		klog.ErrorS(err, "Memory hints", "pod", klog.KObj(pod))
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if blocks := m.static.entries.get(string(pod.UID), c.Name); blocks != nil {
			return hintsOf(blocks, req)
		}
	}
	return m.static.hints(string(pod.UID), req)
}

// hintsOf are the hints of blocks placed before: each block's nodes, preferred. A block that
// no longer matches the request gives no preference.
func hintsOf(blocks []block, req map[v1.ResourceName]uint64) map[string][]topology.Hint {
	if len(blocks) != len(req) {
		return nil
	}
	hints := map[string][]topology.Hint{}
	for _, b := range blocks {
		if size, ok := req[b.Type]; !ok || size != b.Size {
			return nil
		}
		hints[string(b.Type)] = append(hints[string(b.Type)], topology.Hint{NUMANodes: maskOf(b.NUMAAffinity), Preferred: true})
	}
	return hints
}

// Allocate sets c's memory aside within affinity (zero mask: where the policy prefers). Only
// containers of Guaranteed pods get memory set aside.
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container, affinity topology.Hint) error {
	if m.static == nil || qos.Class(pod) != v1.PodQOSGuaranteed {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	metricPinningRequests.Inc()
	if err := m.static.allocate(pod, c, affinity); err != nil {
		metricPinningErrors.Inc()
		klog.InfoS("Memory allocation refused", "pod", klog.KObj(pod), "container", c.Name, "err", err)
		return err
	}
	m.saveOrLog()
	return nil
}

// CreatingContainer is called as c is created: it returns the NUMA nodes c's memory is pinned
// to (cpuset syntax, "" for anywhere), and releases the memory of the pod's regular init
// containers before c, which have run to completion.
func (m *Manager) CreatingContainer(pod *v1.Pod, c *v1.Container) (mems string) {
	if m.static == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mems = nodeList(m.static.entries.get(string(pod.UID), c.Name))
	changed := false
	for i := range pod.Spec.InitContainers {
		init := &pod.Spec.InitContainers[i]
		if init.Name == c.Name {
			break
		}
		if isRegularInit(pod, init.Name) && m.static.release(string(pod.UID), init.Name) {
			changed = true
		}
	}
	if changed {
		m.saveOrLog()
	}
	return mems
}

// nodeList prints the NUMA nodes of blocks as a cpuset list ("0,1"), each once.
func nodeList(blocks []block) string {
	var mask topology.Mask
	for _, b := range blocks {
		mask |= maskOf(b.NUMAAffinity)
	}
	ids := mask.IDs()
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}

// RemovePod gives back the memory of a pod that is gone.
func (m *Manager) RemovePod(uid types.UID) {
	if m.static == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.removePod(string(uid)) {
		m.saveOrLog()
	}
}

func (m *Manager) removePod(uid string) bool {
	removed := false
	for name := range m.static.entries[uid] {
		removed = m.static.release(uid, name) || removed
	}
	if removed {
		klog.V(2).InfoS("Memory manager released a pod's memory", "podUID", uid)
	}
	return removed
}

// RemoveInactive gives back the memory of pods that are not in active (RetainOnly).
func (m *Manager) RemoveInactive(active []*v1.Pod) {
	live := map[types.UID]bool{}
	for _, p := range active {
		live[p.UID] = true
	}
	_ = m.RetainOnly(func(uid types.UID) bool { return live[uid] })
}

// RetainOnly gives back the memory of pods keep says no to, now and at the call before (a
// pod being admitted is not active yet for a moment; once all sources have been seen, a pod
// inactive twice is gone, for instance removed while nodelet was down).
func (m *Manager) RetainOnly(keep func(types.UID) bool) error {
	if m.static == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	inactive, changed := map[string]bool{}, false
	for uid := range m.static.entries {
		switch {
		case keep(types.UID(uid)):
		case m.inactive[uid]:
			changed = m.removePod(uid) || changed
		default:
			inactive[uid] = true
		}
	}
	m.inactive = inactive
	if changed {
		m.saveOrLog()
	}
	return nil
}

// Name names the per-pod state: the pod's NUMA memory.
func (m *Manager) Name() string { return "memory" }

// ReleasePod gives back the pod's memory (RemovePod).
func (m *Manager) ReleasePod(uid types.UID) error {
	m.RemovePod(uid)
	return nil
}

// ContainerMemory is the memory set aside for a container, for the pod-resources API.
func (m *Manager) ContainerMemory(podUID types.UID, container string) []*podresourcesv1.ContainerMemory {
	if m.static == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return toPodResources(m.static.entries.get(string(podUID), container))
}

// AllocatableMemory is each NUMA node's allocatable memory of each kind (none is zero), for the
// pod-resources API; empty with policy None.
func (m *Manager) AllocatableMemory() []*podresourcesv1.ContainerMemory {
	if m.static == nil {
		return []*podresourcesv1.ContainerMemory{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var blocks []block
	for _, id := range m.static.nodeIDs() {
		tables := m.static.machine[id].MemoryMap
		for _, name := range sortedTableNames(tables) {
			if t := tables[name]; t.Allocatable > 0 {
				blocks = append(blocks, block{NUMAAffinity: []int{id}, Type: name, Size: t.Allocatable})
			}
		}
	}
	return toPodResources(blocks)
}

func sortedTableNames(tables map[v1.ResourceName]*memoryTable) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(tables))
	for name := range tables {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func toPodResources(blocks []block) []*podresourcesv1.ContainerMemory {
	out := make([]*podresourcesv1.ContainerMemory, 0, len(blocks))
	for _, b := range blocks {
		nodes := make([]*podresourcesv1.NUMANode, 0, len(b.NUMAAffinity))
		for _, id := range b.NUMAAffinity {
			nodes = append(nodes, &podresourcesv1.NUMANode{ID: int64(id)})
		}
		out = append(out, &podresourcesv1.ContainerMemory{MemoryType: string(b.Type), Size_: b.Size, Topology: &podresourcesv1.TopologyInfo{Nodes: nodes}})
	}
	return out
}
