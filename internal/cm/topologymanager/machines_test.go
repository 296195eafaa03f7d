package topologymanager

import (
	"fmt"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/host/topology"
)

// cpuProvider is a small exclusive-CPU manager over a machine: each container asks for the
// number of CPUs in its name's suffix ("c3": 3 CPUs). Its hints are what upstream's CPU manager
// offers: every set of NUMA nodes with enough free CPUs, preferred when no smaller set of nodes
// could ever hold the request.
type cpuProvider struct {
	machine *topology.Machine
	free    cpuset.CPUSet
	given   map[types.UID]cpuset.CPUSet
}

func newCPUProvider(m *topology.Machine) *cpuProvider {
	return &cpuProvider{machine: m, free: m.CPUSet(), given: map[types.UID]cpuset.CPUSet{}}
}

func request(c *v1.Container) int {
	n, _ := strconv.Atoi(c.Name[1:])
	return n
}

func (p *cpuProvider) nodeCPUs(mask topology.Mask) cpuset.CPUSet {
	var all cpuset.CPUSet
	for _, n := range p.machine.NUMANodes {
		if mask.Has(n.ID) {
			all = all.Union(n.CPUs)
		}
	}
	return all
}

func (p *cpuProvider) masks(visit func(topology.Mask)) {
	ids := p.machine.NUMANodeIDs()
	for bits := 1; bits < 1<<len(ids); bits++ {
		var m topology.Mask
		for i, id := range ids {
			if bits&(1<<i) != 0 {
				m |= topology.MaskOf(id)
			}
		}
		visit(m)
	}
}

func (p *cpuProvider) ContainerHints(_ *v1.Pod, c *v1.Container) map[string][]topology.Hint {
	want := request(c)
	fewest := len(p.machine.NUMANodes) + 1
	p.masks(func(m topology.Mask) {
		if p.nodeCPUs(m).Size() >= want {
			fewest = min(fewest, m.Count())
		}
	})
	hints := []topology.Hint{}
	p.masks(func(m topology.Mask) {
		if p.nodeCPUs(m).Intersection(p.free).Size() >= want {
			hints = append(hints, topology.Hint{NUMANodes: m, Preferred: m.Count() == fewest})
		}
	})
	return map[string][]topology.Hint{"cpu": hints}
}

func (p *cpuProvider) PodHints(pod *v1.Pod) map[string][]topology.Hint {
	return p.ContainerHints(pod, &pod.Spec.Containers[0])
}

func (p *cpuProvider) Allocate(pod *v1.Pod, c *v1.Container, affinity topology.Hint) error {
	from := p.free
	if affinity.NUMANodes != 0 {
		from = p.nodeCPUs(affinity.NUMANodes).Intersection(p.free)
	}
	want := request(c)
	if from.Size() < want {
		return fmt.Errorf("not enough free CPUs on nodes %s", affinity.NUMANodes)
	}
	got := cpuset.New(from.List()[:want]...)
	p.free = p.free.Difference(got)
	p.given[pod.UID] = p.given[pod.UID].Union(got)
	return nil
}

func (p *cpuProvider) RemovePod(uid types.UID) {
	p.free = p.free.Union(p.given[uid])
	delete(p.given, uid)
}

func cpuPod(i, cpus int) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: fmt.Sprintf("c%d", cpus)}}}}
}

// machines are synthetic machines of 2 to 64 CPUs on 1 to 4 NUMA nodes, with and without
// hyperthreads.
var machines = []struct{ sockets, numaPerSocket, coresPerNUMA, threads int }{
	{1, 1, 1, 2}, {1, 1, 4, 1}, {1, 2, 2, 2}, {1, 4, 2, 1}, {1, 3, 2, 2},
	{2, 1, 4, 2}, {2, 2, 2, 2}, {2, 2, 4, 2}, {2, 2, 8, 2},
}

// Each policy's answer for one container of every size on every machine.
func TestPoliciesOnSyntheticMachines(t *testing.T) {
	for _, mc := range machines {
		m := topology.Synthetic(mc.sockets, mc.numaPerSocket, mc.coresPerNUMA, mc.threads, 1<<30)
		perNode := mc.coresPerNUMA * mc.threads
		nodes := len(m.NUMANodes)
		name := fmt.Sprintf("%d CPUs on %d NUMA nodes", len(m.CPUs), nodes)
		for want := 1; want <= len(m.CPUs); want++ {
			fewest := (want + perNode - 1) / perNode
			for _, policy := range []string{PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode} {
				cpus := newCPUProvider(m)
				mgr := newManager(t, m, policy, ScopeContainer, cpus)
				pod := cpuPod(0, want)
				ok, reason, _ := mgr.Admit(pod)
				fitsOneNode := want <= perNode
				if policy == PolicySingleNUMANode && ok != fitsOneNode {
					t.Errorf("%s, %s, %d CPUs: admitted=%v (%s), want %v", name, policy, want, ok, reason, fitsOneNode)
					continue
				}
				if policy != PolicySingleNUMANode && !ok {
					t.Errorf("%s, %s, %d CPUs: refused (%s)", name, policy, want, reason)
					continue
				}
				if !ok {
					continue
				}
				got, _ := mgr.Affinity(pod.UID, pod.Spec.Containers[0].Name)
				wantNodes := fewest
				if policy == PolicySingleNUMANode && nodes == 1 {
					wantNodes = 0 // the whole machine: anywhere
				}
				if got.NUMANodes.Count() != wantNodes || !got.Preferred {
					t.Errorf("%s, %s, %d CPUs: placed on %q (preferred %v), want %d nodes, preferred", name, policy, want, got.NUMANodes, got.Preferred, wantNodes)
				}
			}
		}
	}
}

// Filling a machine with pods of one size under single-numa-node: every pod fits on one node
// until no node has room, and then the pod is refused with nothing kept.
func TestSingleNUMANodeFillsNodeByNode(t *testing.T) {
	for _, mc := range machines {
		m := topology.Synthetic(mc.sockets, mc.numaPerSocket, mc.coresPerNUMA, mc.threads, 1<<30)
		perNode := mc.coresPerNUMA * mc.threads
		for size := 1; size <= perNode; size++ {
			cpus := newCPUProvider(m)
			mgr := newManager(t, m, PolicySingleNUMANode, ScopePod, cpus)
			admitted := 0
			for i := 0; ; i++ {
				pod := cpuPod(i, size)
				ok, reason, _ := mgr.Admit(pod)
				if !ok {
					if reason != ReasonTopologyAffinity {
						t.Errorf("%d CPUs, size %d: refused with %q", len(m.CPUs), size, reason)
					}
					if _, kept := cpus.given[pod.UID]; kept {
						t.Errorf("%d CPUs, size %d: the refused pod kept CPUs", len(m.CPUs), size)
					}
					break
				}
				admitted++
				if !onOneNode(m, cpus.given[pod.UID]) {
					t.Errorf("%d CPUs, size %d: pod %d got CPUs %s across NUMA nodes", len(m.CPUs), size, i, cpus.given[pod.UID])
				}
			}
			if want := len(m.NUMANodes) * (perNode / size); admitted != want {
				t.Errorf("%d CPUs on %d nodes, size %d: admitted %d pods, want %d", len(m.CPUs), len(m.NUMANodes), size, admitted, want)
			}
		}
	}
}

func onOneNode(m *topology.Machine, cpus cpuset.CPUSet) bool {
	for _, n := range m.NUMANodes {
		if cpus.IsSubsetOf(n.CPUs) {
			return true
		}
	}
	return false
}
