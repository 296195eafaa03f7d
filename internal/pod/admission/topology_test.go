package admission

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/status"
)

// fakeTopology refuses every pod named in refuse, as the memory manager refuses what no NUMA
// node holds, and records what it was asked, what it holds and what it gave back.
type fakeTopology struct {
	refuse   map[string]bool
	asked    []string
	holding  map[types.UID]bool
	released []types.UID
}

func (f *fakeTopology) Admit(pod *v1.Pod) (bool, string, string) {
	f.asked = append(f.asked, pod.Name)
	if f.refuse[pod.Name] {
		return false, "UnexpectedAdmissionError", "Allocate failed due to [memorymanager] failed to find NUMA nodes to extend the current topology hint, which is unexpected"
	}
	if f.holding == nil {
		f.holding = map[types.UID]bool{}
	}
	f.holding[pod.UID] = true
	return true, "", ""
}

func (f *fakeTopology) Release(uid types.UID) {
	delete(f.holding, uid)
	f.released = append(f.released, uid)
}

func twoCPUs() v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
}

// As upstream, the resource managers' allocation runs before the resource fit: a pod asking
// for more memory than the node has gets the memory manager's refusal, not OutOfmemory.
func TestTopologyRefusalWinsOverTheResourceFit(t *testing.T) {
	topo := &fakeTopology{refuse: map[string]bool{"huge": true}}
	a := &Admitter{Statuses: status.NewManager(nil), Topology: topo, Allocatable: twoCPUs}
	ok, reason, msg := a.Admit(podRequesting("huge", "1", "4Gi"), nil)
	if ok || reason != "UnexpectedAdmissionError" || msg != "Allocate failed due to [memorymanager] failed to find NUMA nodes to extend the current topology hint, which is unexpected" {
		t.Errorf("huge pod: ok=%v %q %q, want the memory manager's refusal", ok, reason, msg)
	}
	if ok, reason, msg := a.Admit(podRequesting("aligned", "1", ""), nil); !ok {
		t.Fatalf("aligned pod refused: %s %s", reason, msg)
	}
	if len(topo.released) != 0 || !topo.holding["uid-aligned"] {
		t.Errorf("admitted pod: holding %v, released %v; want it held", topo.holding, topo.released)
	}
}

// A pod the resource managers set resources aside for and a later check refuses gets nothing:
// what they set aside is given back.
func TestLaterRefusalReleasesTheAllocation(t *testing.T) {
	shutdown := func(*v1.Pod) (bool, string, string) {
		return false, "Terminated", "Pod was rejected as the node is shutting down."
	}
	cases := []struct {
		name   string
		pod    *v1.Pod
		active []*v1.Pod
		a      Admitter
		reason string
	}{
		{"fit", podRequesting("over-cpu", "3", ""), nil, Admitter{Allocatable: twoCPUs}, "OutOfcpu"},
		{"max pods", podRequesting("one-too-many", "1", ""), []*v1.Pod{podRequesting("other", "", "")}, Admitter{MaxPods: 1}, "OutOfpods"},
		{"predicates", withHostPort(podRequesting("port", "1", "")), []*v1.Pod{withHostPort(podRequesting("holder", "", ""))},
			Admitter{Node: func() *v1.Node { return &v1.Node{} }}, ReasonNodePorts},
		{"apparmor", withAppArmor(podRequesting("confined", "1", "")), nil, Admitter{HostHasAppArmor: func() bool { return false }}, ReasonAppArmor},
		{"shutdown", podRequesting("late", "1", ""), nil, Admitter{Shutdown: shutdown}, "Terminated"},
	}
	for _, tc := range cases {
		topo := &fakeTopology{}
		a := tc.a
		a.Statuses, a.Topology = status.NewManager(nil), topo
		ok, reason, _ := a.Admit(tc.pod, tc.active)
		if ok || reason != tc.reason {
			t.Errorf("%s: ok=%v %q, want %q", tc.name, ok, reason, tc.reason)
		}
		if !slices.Equal(topo.asked, []string{tc.pod.Name}) || !slices.Equal(topo.released, []types.UID{tc.pod.UID}) || len(topo.holding) != 0 {
			t.Errorf("%s: asked %v, released %v, still holding %v; want the allocation given back", tc.name, topo.asked, topo.released, topo.holding)
		}
	}
}

// Checks upstream runs before its allocate-resources handler refuse without asking the
// resource managers.
func TestEarlierRefusalNeverReachesTopology(t *testing.T) {
	topo := &fakeTopology{}
	pressure := func(*v1.Pod) (bool, string, string) {
		return false, "Evicted", "The node had condition: [MemoryPressure]. "
	}
	a := &Admitter{Statuses: status.NewManager(nil), Topology: topo, Pressure: pressure}
	if ok, reason, _ := a.Admit(podRequesting("pressed", "1", ""), nil); ok || reason != "Evicted" {
		t.Errorf("pressure: ok=%v %q, want Evicted", ok, reason)
	}
	a.Pressure = nil
	sysctl := podRequesting("sysctl", "1", "")
	sysctl.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
	if ok, reason, _ := a.Admit(sysctl, nil); ok || reason != ReasonSysctlForbidden {
		t.Errorf("sysctl: ok=%v %q, want %s", ok, reason, ReasonSysctlForbidden)
	}
	if len(topo.asked) != 0 {
		t.Errorf("topology asked about %v, want nothing", topo.asked)
	}
}

func withHostPort(p *v1.Pod) *v1.Pod {
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	return p
}

func withAppArmor(p *v1.Pod) *v1.Pod {
	p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
	return p
}
