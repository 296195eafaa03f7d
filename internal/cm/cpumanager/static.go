package cpumanager

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/podspec/qos"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// SMTAlignmentError refuses a container under full-pcpus-only whose request cannot be given
// as whole cores. Its Reason is the pod's admission reason, as upstream.
type SMTAlignmentError struct {
	RequestedCPUs         int
	CpusPerCore           int
	AvailablePhysicalCPUs int
	CausedByPhysicalCPUs  bool
}

func (e SMTAlignmentError) Error() string {
	if e.CausedByPhysicalCPUs {
		return fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", e.AvailablePhysicalCPUs, e.RequestedCPUs, e.CpusPerCore)
	}
	return fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", e.RequestedCPUs, e.CpusPerCore)
}

// Reason is the admission reason of a pod refused with e.
func (e SMTAlignmentError) Reason() string { return "SMTAlignmentError" }

// static is the static policy: containers of Guaranteed pods asking for whole CPUs get CPUs of
// their own, every other container runs on the shared pool (the default set), which keeps the
// reserved CPUs unless strict-cpu-reservation takes them out of it.
type static struct {
	machine     layout
	cpusPerCore int
	reserved    cpuset.CPUSet
	// reservedCores is reserved grown to whole cores: what full-pcpus-only keeps out of reach.
	reservedCores cpuset.CPUSet
	opts          cmpolicy.CPUOptions
	// reuse holds, for the pod being admitted, the CPUs its (non-restartable) init containers
	// hold, which its later containers may take over, as upstream.
	reuse map[string]cpuset.CPUSet
}

// newStatic reserves reservedCPUs, or when that is empty numReserved CPUs chosen by topology
// (the lowest cores first, as upstream), away from exclusive use.
func newStatic(m *topology.Machine, numReserved int, reservedCPUs cpuset.CPUSet, opts cmpolicy.CPUOptions) (*static, error) {
	p := &static{machine: newLayout(m), opts: opts, reuse: map[string]cpuset.CPUSet{}}
	p.cpusPerCore = p.machine.cpusPerCore()
	reserved := reservedCPUs
	if reserved.IsEmpty() {
		reserved, _ = p.take(p.machine.cpus(), numReserved)
	}
	if reserved.Size() != numReserved {
		return nil, fmt.Errorf("[cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)", reserved, numReserved)
	}
	if !reserved.IsSubsetOf(p.machine.cpus()) {
		return nil, fmt.Errorf("[cpumanager] reserved CPUs %s are not all on this machine (%s)", reserved, p.machine.cpus())
	}
	p.reserved = reserved
	p.reservedCores = cpuset.New()
	for _, id := range reserved.List() {
		p.reservedCores = p.reservedCores.Union(p.machine.in(coreOf, p.machine[id].Core))
	}
	klog.InfoS("Reserved CPUs not available for exclusive assignment", "reservedSize", reserved.Size(), "reserved", reserved, "reservedPhysicalCPUs", p.reservedCores)
	return p, nil
}

// take chooses n CPUs of available by the configured placement.
func (p *static) take(available cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	if p.opts.DistributeAcrossNUMA {
		groupSize := 1
		if p.opts.FullPCPUsOnly {
			groupSize = p.cpusPerCore
		}
		return takeDistributed(p.machine, available, n, groupSize)
	}
	return takePacked(p.machine, available, n)
}

// start checks a restored state against the machine and the reservation, or fills an empty
// one (every CPU shared, but for the reserved ones under strict-cpu-reservation).
func (p *static) start(s *state) error {
	all := p.machine.cpus()
	if p.opts.StrictReservation {
		all = all.Difference(p.reserved)
	}
	if s.defaultSet.IsEmpty() {
		if len(s.assigned) != 0 {
			return fmt.Errorf("default cpuset cannot be empty")
		}
		s.defaultSet = all
		return nil
	}
	if err := p.checkReservedShared(s.defaultSet); err != nil {
		return err
	}
	for pod, containers := range s.assigned {
		for name, cpus := range containers {
			if !cpus.Intersection(s.defaultSet).IsEmpty() {
				return fmt.Errorf("pod: %s, container: %s cpuset: %q overlaps with default cpuset %q", pod, name, cpus.String(), s.defaultSet.String())
			}
		}
	}
	if known := s.defaultSet.Union(s.assigned.all()); !known.Equals(all) {
		return fmt.Errorf("current set of available CPUs %q doesn't match with CPUs in state %q", all.String(), known.String())
	}
	return nil
}

// checkReservedShared refuses a restored shared pool that lacks a reserved CPU, or under
// strict-cpu-reservation one that has any, as upstream.
func (p *static) checkReservedShared(defaultSet cpuset.CPUSet) error {
	if p.opts.StrictReservation {
		if shared := p.reserved.Intersection(defaultSet); !shared.IsEmpty() {
			return fmt.Errorf("some of strictly reserved cpus: %q are present in defaultCpuSet: %q", shared.String(), defaultSet.String())
		}
		return nil
	}
	if !p.reserved.IsSubsetOf(defaultSet) {
		return fmt.Errorf("not all reserved cpus: %q are present in defaultCpuSet: %q", p.reserved.String(), defaultSet.String())
	}
	return nil
}

// available is the shared pool less the reserved CPUs: what exclusive requests draw from.
func (p *static) available(s *state) cpuset.CPUSet { return s.defaultSet.Difference(p.reserved) }

// allocatable is every CPU that can ever be given exclusively.
func (p *static) allocatable() cpuset.CPUSet { return p.machine.cpus().Difference(p.reserved) }

// allocate gives c its exclusive CPUs, on the NUMA nodes of affinity first (zero: anywhere).
// A container that already has CPUs (a restart of nodelet, or a second admission) keeps them.
func (p *static) allocate(s *state, pod *v1.Pod, c *v1.Container, affinity topology.Mask) (err error) {
	n := p.guaranteedCPUs(pod, c)
	if n == 0 {
		return nil
	}
	defer func() { p.countPinning(err) }()
	uid := string(pod.UID)
	if cpus, ok := s.assigned.get(uid, c.Name); ok {
		p.updateReuse(pod, c, cpus)
		return nil
	}
	if err := p.checkSMT(s, n); err != nil {
		return err
	}
	cpus, err := p.allocateCPUs(s, n, affinity, p.reuse[uid])
	if err != nil {
		return err
	}
	s.assigned.set(uid, c.Name, cpus)
	p.updateReuse(pod, c, cpus)
	p.countUncoreAlignment(cpus)
	klog.V(2).InfoS("Allocated exclusive CPUs", "pod", klog.KObj(pod), "containerName", c.Name, "cpuset", cpus.String())
	return nil
}

// checkSMT refuses, under full-pcpus-only, a request of part of a core or of more whole cores
// than are free.
func (p *static) checkSMT(s *state, n int) error {
	if !p.opts.FullPCPUsOnly {
		return nil
	}
	if n%p.cpusPerCore != 0 {
		return SMTAlignmentError{RequestedCPUs: n, CpusPerCore: p.cpusPerCore}
	}
	if free := s.defaultSet.Difference(p.reservedCores).Size(); n > free {
		return SMTAlignmentError{RequestedCPUs: n, CpusPerCore: p.cpusPerCore, AvailablePhysicalCPUs: free, CausedByPhysicalCPUs: true}
	}
	return nil
}

func (p *static) allocateCPUs(s *state, n int, affinity topology.Mask, reusable cpuset.CPUSet) (cpuset.CPUSet, error) {
	allocatable := p.available(s).Union(reusable)
	result := cpuset.New()
	if affinity != 0 {
		aligned := allocatable.Intersection(p.machine.in(numaOf, affinity.IDs()...))
		cpus, err := p.take(aligned, min(n, aligned.Size()))
		if err != nil {
			return cpuset.New(), err
		}
		result = cpus
	}
	rest, err := p.take(allocatable.Difference(result), n-result.Size())
	if err != nil {
		return cpuset.New(), err
	}
	result = result.Union(rest)
	s.defaultSet = s.defaultSet.Difference(result)
	return result, nil
}

// updateReuse records that an init container's CPUs may go to the pod's next containers, and
// that an app container's no longer may. Only the pod being admitted is remembered.
func (p *static) updateReuse(pod *v1.Pod, c *v1.Container, cpus cpuset.CPUSet) {
	uid := string(pod.UID)
	for other := range p.reuse {
		if other != uid {
			delete(p.reuse, other)
		}
	}
	reusable, ok := p.reuse[uid]
	if !ok {
		reusable = cpuset.New()
	}
	if isInitContainer(pod, c.Name) && !sidecar.Is(c) {
		p.reuse[uid] = reusable.Union(cpus)
		return
	}
	p.reuse[uid] = reusable.Difference(cpus)
}

// release returns a container's CPUs to the shared pool, except those a sibling still holds
// (an app container given its init container's CPUs).
func (p *static) release(s *state, pod, container string) {
	cpus, ok := s.assigned.get(pod, container)
	if !ok {
		return
	}
	s.assigned.remove(pod, container)
	inUse := cpuset.New()
	for _, other := range s.assigned[pod] {
		inUse = inUse.Union(other)
	}
	s.defaultSet = s.defaultSet.Union(cpus.Difference(inUse))
}

// guaranteedCPUs is how many exclusive CPUs c gets: its CPU request when the pod is Guaranteed
// and the request is a whole number, else 0.
func (p *static) guaranteedCPUs(pod *v1.Pod, c *v1.Container) int {
	if qos.Class(pod) != v1.PodQOSGuaranteed {
		return 0
	}
	q := c.Resources.Requests[v1.ResourceCPU]
	if q.Value()*1000 != q.MilliValue() {
		return 0
	}
	return int(q.Value())
}

// podGuaranteedCPUs is what the pod needs at its peak: the larger of its app containers and
// sidecars together, and its largest init container beside the sidecars started before it.
func (p *static) podGuaranteedCPUs(pod *v1.Pod) int {
	initPeak, sidecars := 0, 0
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		n := p.guaranteedCPUs(pod, c)
		if sidecar.Is(c) {
			sidecars += n
		} else {
			initPeak = max(initPeak, sidecars+n)
		}
	}
	apps := 0
	for i := range pod.Spec.Containers {
		apps += p.guaranteedCPUs(pod, &pod.Spec.Containers[i])
	}
	return max(initPeak, apps+sidecars)
}

func isInitContainer(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return true
		}
	}
	return false
}
