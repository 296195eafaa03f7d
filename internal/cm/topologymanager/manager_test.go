package topologymanager

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

// fakeProvider answers fixed hints and records what it is asked to allocate.
type fakeProvider struct {
	container  map[string]provided // by container name
	pod        provided
	podAsked   int
	failOn     string // container whose Allocate fails
	failWith   error
	allocated  []string // "container@nodes"
	removedPod []types.UID
}

func (f *fakeProvider) ContainerHints(_ *v1.Pod, c *v1.Container) map[string][]topology.Hint {
	return f.container[c.Name]
}

func (f *fakeProvider) PodHints(*v1.Pod) map[string][]topology.Hint {
	f.podAsked++
	return f.pod
}

func (f *fakeProvider) Allocate(_ *v1.Pod, c *v1.Container, affinity topology.Hint) error {
	if c.Name == f.failOn {
		return f.failWith
	}
	f.allocated = append(f.allocated, c.Name+"@"+affinity.NUMANodes.String())
	return nil
}

func (f *fakeProvider) RemovePod(uid types.UID) { f.removedPod = append(f.removedPod, uid) }

func testPod(init []string, app ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}
	for _, n := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n})
	}
	for _, n := range app {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n})
	}
	return p
}

func newManager(t *testing.T, m *topology.Machine, policy, scope string, providers ...HintProvider) *Manager {
	t.Helper()
	mgr, err := New(m, Config{Policy: policy, Scope: scope}, providers...)
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

func TestContainerScopeAlignsEachContainerInOrder(t *testing.T) {
	cpu := &fakeProvider{container: map[string]provided{
		"init": {"cpu": {hint(true, 1)}},
		"a":    {"cpu": {hint(true, 0), hint(true, 1)}},
		"b":    nil,
	}}
	gpu := &fakeProvider{container: map[string]provided{"a": {"gpu": {hint(true, 1)}}}}
	mgr := newManager(t, twoNodes(), PolicyRestricted, ScopeContainer, cpu, gpu)
	pod := testPod([]string{"init"}, "a", "b")
	if ok, reason, msg := mgr.Admit(pod); !ok {
		t.Fatalf("refused: %s %s", reason, msg)
	}
	want := []string{"init@1", "a@1", "b@0,1"}
	if !slices.Equal(cpu.allocated, want) || !slices.Equal(gpu.allocated, want) {
		t.Errorf("allocated cpu %v gpu %v, want %v for both", cpu.allocated, gpu.allocated, want)
	}
	if h, ok := mgr.Affinity(pod.UID, "a"); !ok || h != hint(true, 1) {
		t.Errorf("affinity of a: %+v %v", h, ok)
	}
	mgr.RemovePod(pod.UID)
	if _, ok := mgr.Affinity(pod.UID, "a"); ok {
		t.Error("affinity kept after RemovePod")
	}
}

func TestPodScopeMergesOnceForEveryContainer(t *testing.T) {
	cpu := &fakeProvider{pod: provided{"cpu": {hint(true, 1), hint(false, 0, 1)}},
		container: map[string]provided{"a": {"cpu": {hint(true, 0)}}}} // container hints must not be asked
	mgr := newManager(t, twoNodes(), PolicySingleNUMANode, ScopePod, cpu)
	if ok, reason, msg := mgr.Admit(testPod([]string{"init"}, "a", "b")); !ok {
		t.Fatalf("refused: %s %s", reason, msg)
	}
	if want := []string{"init@1", "a@1", "b@1"}; !slices.Equal(cpu.allocated, want) || cpu.podAsked != 1 {
		t.Errorf("allocated %v (pod hints asked %d times), want %v, asked once", cpu.allocated, cpu.podAsked, want)
	}
}

func TestRefusalIsTopologyAffinityErrorAndReleases(t *testing.T) {
	for _, scope := range []string{ScopeContainer, ScopePod} {
		cpu := &fakeProvider{
			container: map[string]provided{"a": {"cpu": {hint(true, 0)}}, "b": {"cpu": {hint(true, 0)}}},
			pod:       provided{"cpu": {hint(true, 0)}},
		}
		gpu := &fakeProvider{container: map[string]provided{"b": {"gpu": {hint(true, 1)}}}, pod: provided{"gpu": {hint(true, 1)}}}
		mgr := newManager(t, twoNodes(), PolicySingleNUMANode, scope, cpu, gpu)
		pod := testPod(nil, "a", "b")
		ok, reason, msg := mgr.Admit(pod)
		if ok || reason != ReasonTopologyAffinity || msg != "Resources cannot be allocated with Topology locality" {
			t.Errorf("scope %s: got %v %q %q, want a TopologyAffinityError refusal", scope, ok, reason, msg)
		}
		if !slices.Equal(cpu.removedPod, []types.UID{pod.UID}) || !slices.Equal(gpu.removedPod, []types.UID{pod.UID}) {
			t.Errorf("scope %s: providers not told to release the refused pod: %v %v", scope, cpu.removedPod, gpu.removedPod)
		}
		if _, kept := mgr.Affinity(pod.UID, "a"); kept {
			t.Errorf("scope %s: the refused pod's placements are kept", scope)
		}
	}
}

// reasoned is an allocation failure with its own admission reason, as the CPU manager's
// SMTAlignmentError.
type reasoned struct{}

func (reasoned) Error() string {
	return "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2"
}
func (reasoned) Reason() string { return "SMTAlignmentError" }

func TestAllocationFailureReasons(t *testing.T) {
	cases := []struct {
		err                 error
		wantReason, wantMsg string
	}{
		{fmt.Errorf("static policy: %w", reasoned{}), "SMTAlignmentError", reasoned{}.Error()},
		{errors.New("no free device"), ReasonUnexpected, "Allocate failed due to no free device, which is unexpected"},
	}
	for _, policy := range []string{PolicyNone, PolicyBestEffort} {
		for _, tc := range cases {
			p := &fakeProvider{failOn: "b", failWith: tc.err}
			mgr := newManager(t, twoNodes(), policy, ScopeContainer, p)
			ok, reason, msg := mgr.Admit(testPod(nil, "a", "b"))
			if ok || reason != tc.wantReason || msg != tc.wantMsg {
				t.Errorf("policy %s, %v: got %v %q %q, want %q %q", policy, tc.err, ok, reason, msg, tc.wantReason, tc.wantMsg)
			}
			if len(p.removedPod) != 1 {
				t.Errorf("policy %s: container a's allocation not released", policy)
			}
		}
	}
}

func TestPolicyNoneAllocatesAnywhereWithoutAskingForHints(t *testing.T) {
	// Hints that single-numa-node would refuse: none must neither ask nor refuse.
	p := &fakeProvider{container: map[string]provided{"a": {"cpu": {}}}, pod: provided{"cpu": {}}}
	mgr := newManager(t, topology.Synthetic(1, 9, 1, 1, 0), PolicyNone, ScopePod, p)
	if ok, reason, msg := mgr.Admit(testPod(nil, "a")); !ok {
		t.Fatalf("refused: %s %s", reason, msg)
	}
	if want := []string{"a@"}; !slices.Equal(p.allocated, want) || p.podAsked != 0 {
		t.Errorf("allocated %v, pod hints asked %d times; want %v and no hints", p.allocated, p.podAsked, want)
	}
}

func TestNewRefuses(t *testing.T) {
	nine := topology.Synthetic(1, 9, 1, 1, 0)
	noDistances := topology.Synthetic(1, 2, 1, 1, 0)
	for i := range noDistances.NUMANodes {
		noDistances.NUMANodes[i].Distances = nil
	}
	cases := []struct {
		machine *topology.Machine
		cfg     Config
		want    string
	}{
		{twoNodes(), Config{Policy: "strict", Scope: ScopeContainer}, `unknown policy: "strict"`},
		{twoNodes(), Config{Policy: PolicyRestricted, Scope: "node"}, `unknown scope: "node"`},
		{twoNodes(), Config{Policy: PolicyRestricted, Scope: ScopePod, Options: map[string]string{"align-by-socket": "true"}},
			`unknown Topology Manager Policy option: "align-by-socket"`},
		{nine, Config{Policy: PolicyBestEffort, Scope: ScopeContainer}, "unsupported on machines with more than 8 NUMA Nodes"},
		{noDistances, Config{Policy: PolicyBestEffort, Scope: ScopeContainer, Options: map[string]string{cmpolicy.OptionPreferClosestNUMANodes: "true"}}, "no distances"},
	}
	for _, tc := range cases {
		if _, err := New(tc.machine, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): err %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, cfg := range []Config{
		{Policy: PolicyNone, Scope: ScopeContainer},
		{Policy: PolicySingleNUMANode, Scope: ScopeContainer, Options: map[string]string{cmpolicy.OptionMaxAllowableNUMANodes: "9"}},
	} {
		if _, err := New(nine, cfg); err != nil {
			t.Errorf("New(%+v) on 9 NUMA nodes: %v", cfg, err)
		}
	}
}

// A pod this manager admitted and a later admission check refused gives back what every
// provider set aside for it.
func TestReleaseGivesBackAnAdmittedPod(t *testing.T) {
	cpu := &fakeProvider{container: map[string]provided{"a": {"cpu": {hint(true, 0)}}}}
	mem := &fakeProvider{}
	mgr := newManager(t, twoNodes(), PolicyBestEffort, ScopeContainer, cpu, mem)
	pod := testPod(nil, "a")
	if ok, reason, msg := mgr.Admit(pod); !ok {
		t.Fatalf("refused: %s %s", reason, msg)
	}
	if len(cpu.removedPod) != 0 {
		t.Fatalf("an admitted pod was released: %v", cpu.removedPod)
	}
	mgr.Release(pod.UID)
	if !slices.Equal(cpu.removedPod, []types.UID{pod.UID}) || !slices.Equal(mem.removedPod, []types.UID{pod.UID}) {
		t.Errorf("providers told to release %v and %v, want %s each", cpu.removedPod, mem.removedPod, pod.UID)
	}
	if _, kept := mgr.Affinity(pod.UID, "a"); kept {
		t.Error("the released pod's placement is kept")
	}
}
