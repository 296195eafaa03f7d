package memorymanager

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/host/topology"
)

func TestSingleNUMAGuaranteedPodPinnedToNode0(t *testing.T) {
	m, _ := newStatic(t, 1, 8*gi, gi)
	pod := guaranteedPod("a", container("app", 2*gi, false))
	hints := m.ContainerHints(pod, &pod.Spec.Containers[0])
	want := map[string][]topology.Hint{"memory": {{NUMANodes: topology.MaskOf(0), Preferred: true}}}
	if !reflect.DeepEqual(hints, want) {
		t.Fatalf("hints = %v, want %v", hints, want)
	}
	if err := admit(t, m, pod); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if got := m.CreatingContainer(pod, &pod.Spec.Containers[0]); got != "0" {
		t.Errorf("mems = %q, want 0", got)
	}
	if got := free(m)[0]; got != 5*gi {
		t.Errorf("free = %d, want 8Gi - 1Gi reserved - 2Gi = %d", got, 5*gi)
	}
}

func TestNonGuaranteedPodsGetNothing(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	burstable := guaranteedPod("b", container("app", 2*gi, true))
	c := &burstable.Spec.Containers[0]
	if h := m.ContainerHints(burstable, c); h != nil {
		t.Errorf("hints for a Burstable pod = %v, want none", h)
	}
	if err := m.Allocate(burstable, c, topology.Hint{}); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if got := m.CreatingContainer(burstable, c); got != "" {
		t.Errorf("mems = %q, want none", got)
	}
	if got := free(m); got[0] != 7*gi || got[1] != 7*gi {
		t.Errorf("free = %v, want untouched", got)
	}
}

func TestTwoNUMAHintsPreferTheNarrowest(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	small := guaranteedPod("s", container("app", 2*gi, false))
	got := m.ContainerHints(small, &small.Spec.Containers[0])["memory"]
	want := []topology.Hint{
		{NUMANodes: topology.MaskOf(0), Preferred: true},
		{NUMANodes: topology.MaskOf(1), Preferred: true},
		{NUMANodes: topology.MaskOf(0, 1), Preferred: false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hints = %v, want %v", got, want)
	}
	big := guaranteedPod("b", container("app", 10*gi, false))
	got = m.ContainerHints(big, &big.Spec.Containers[0])["memory"]
	want = []topology.Hint{{NUMANodes: topology.MaskOf(0, 1), Preferred: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hints for 10Gi = %v, want only both nodes, preferred", got)
	}
}

func TestPodsFillNodesInOrder(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	for i, wantNode := range []string{"0", "0", "0", "1"} {
		pod := guaranteedPod(string(rune('a'+i)), container("app", 2*gi, false))
		if err := admit(t, m, pod); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if got := mems(m, pod, "app"); got != wantNode {
			t.Errorf("pod %d on %q, want %q", i, got, wantNode)
		}
	}
}

func TestMemoryThatFitsNowhereIsRefused(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	pod := guaranteedPod("x", container("app", 15*gi, false))
	if h := m.ContainerHints(pod, &pod.Spec.Containers[0]); len(h) != 0 {
		t.Errorf("hints = %v, want none (no preference, as upstream)", h)
	}
	err := admit(t, m, pod)
	if err == nil || !strings.HasPrefix(err.Error(), "[memorymanager] failed to get the default NUMA affinity") {
		t.Fatalf("Allocate = %v, want upstream's refusal", err)
	}
	if got := free(m); got[0] != 7*gi || got[1] != 7*gi {
		t.Errorf("free = %v after a refusal, want untouched", got)
	}
}

func TestCrossNUMAGroupKeepsSingleNodeBlocksOff(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	big := guaranteedPod("big", container("app", 10*gi, false))
	if err := admit(t, m, big); err != nil {
		t.Fatal(err)
	}
	if got := mems(m, big, "app"); got != "0,1" {
		t.Fatalf("big pod on %q, want 0,1", got)
	}
	// 4Gi are left over both nodes: only the group may take more, never one node alone.
	small := guaranteedPod("small", container("app", gi, false))
	got := m.ContainerHints(small, &small.Spec.Containers[0])["memory"]
	want := []topology.Hint{{NUMANodes: topology.MaskOf(0, 1), Preferred: false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hints = %v, want only the group, not preferred", got)
	}
	if err := m.Allocate(small, &small.Spec.Containers[0], topology.Hint{NUMANodes: topology.MaskOf(1), Preferred: true}); err == nil {
		t.Errorf("a single-node block on a grouped node was allowed")
	}
	if err := admit(t, m, small); err != nil {
		t.Fatalf("small pod in the group: %v", err)
	}
	if got := mems(m, small, "app"); got != "0,1" {
		t.Errorf("small pod on %q, want the group 0,1", got)
	}
}

func TestFourNUMAGroupsDoNotOverlap(t *testing.T) {
	m, _ := newStatic(t, 4, 4*gi, gi)
	a := guaranteedPod("a", container("app", 5*gi, false)) // needs two nodes: 0,1
	if err := admit(t, m, a); err != nil {
		t.Fatal(err)
	}
	if got := mems(m, a, "app"); got != "0,1" {
		t.Fatalf("a on %q, want 0,1", got)
	}
	b := guaranteedPod("b", container("app", 5*gi, false))
	if err := admit(t, m, b); err != nil {
		t.Fatal(err)
	}
	if got := mems(m, b, "app"); got != "2,3" {
		t.Errorf("b on %q, want 2,3 (1,2 would overlap a's group)", got)
	}
	c := guaranteedPod("c", container("app", gi, false))
	if err := m.Allocate(c, &c.Spec.Containers[0], topology.Hint{NUMANodes: topology.MaskOf(1, 2), Preferred: true}); err == nil {
		t.Errorf("a block across two groups was allowed")
	}
}

func TestNarrowedAffinityIsWidened(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	pod := guaranteedPod("w", container("app", 10*gi, false))
	// A topology manager merge can hand back node 1 alone: memory widens it to what holds.
	if err := m.Allocate(pod, &pod.Spec.Containers[0], topology.Hint{NUMANodes: topology.MaskOf(1), Preferred: false}); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if got := mems(m, pod, "app"); got != "0,1" {
		t.Errorf("mems = %q, want 0,1", got)
	}
}

func TestAffinityIsFollowed(t *testing.T) {
	m, _ := newStatic(t, 3, 8*gi, gi)
	pod := guaranteedPod("f", container("app", gi, false))
	if err := m.Allocate(pod, &pod.Spec.Containers[0], topology.Hint{NUMANodes: topology.MaskOf(2), Preferred: true}); err != nil {
		t.Fatal(err)
	}
	if got := mems(m, pod, "app"); got != "2" {
		t.Errorf("mems = %q, want the affinity's node 2", got)
	}
}

func TestInitContainerMemoryIsReused(t *testing.T) {
	m, _ := newStatic(t, 1, 8*gi, gi)
	pod := guaranteedPod("i", container("app", 2*gi, false))
	pod.Spec.InitContainers = []v1.Container{container("init", 3*gi, false)}
	if err := admit(t, m, pod); err != nil {
		t.Fatal(err)
	}
	// The pod holds max(init 3Gi, app 2Gi), not their sum.
	if got := free(m)[0]; got != 4*gi {
		t.Errorf("free = %d, want 7Gi - 3Gi", got)
	}
	m.mu.Lock()
	initSize := m.static.entries.get("i", "init")[0].Size
	m.mu.Unlock()
	if initSize != gi {
		t.Errorf("init block = %d, want 1Gi (the app's 2Gi counted once)", initSize)
	}
	if got := m.CreatingContainer(pod, &pod.Spec.InitContainers[0]); got != "0" {
		t.Errorf("init mems = %q", got)
	}
	// The app container starting means init has finished: its memory goes back.
	m.CreatingContainer(pod, &pod.Spec.Containers[0])
	if got := free(m)[0]; got != 5*gi {
		t.Errorf("free after init finished = %d, want 7Gi - 2Gi", got)
	}
}

func TestSidecarMemoryIsNotReused(t *testing.T) {
	m, _ := newStatic(t, 1, 8*gi, gi)
	always := v1.ContainerRestartPolicyAlways
	side := container("side", gi, false)
	side.RestartPolicy = &always
	pod := guaranteedPod("s", container("app", 2*gi, false))
	pod.Spec.InitContainers = []v1.Container{side}
	if err := admit(t, m, pod); err != nil {
		t.Fatal(err)
	}
	m.CreatingContainer(pod, &pod.Spec.Containers[0])
	if got := free(m)[0]; got != 4*gi {
		t.Errorf("free = %d, want 7Gi - 1Gi sidecar - 2Gi app", got)
	}
}

func TestPodHintsCountInitAndSidecars(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	always := v1.ContainerRestartPolicyAlways
	side := container("side", 2*gi, false)
	side.RestartPolicy = &always
	pod := guaranteedPod("p", container("app", 3*gi, false), container("app2", 3*gi, false))
	pod.Spec.InitContainers = []v1.Container{container("init", 4*gi, false), side}
	// max(init 4Gi, sidecar 2Gi + apps 6Gi) = 8Gi: more than one node's 7Gi.
	got := m.PodHints(pod)["memory"]
	want := []topology.Hint{{NUMANodes: topology.MaskOf(0, 1), Preferred: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pod hints = %v, want %v", got, want)
	}
}

func TestRemovePodFreesItsMemory(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	pod := guaranteedPod("r", container("app", 10*gi, false))
	if err := admit(t, m, pod); err != nil {
		t.Fatal(err)
	}
	m.RemovePod(pod.UID)
	if got := free(m); got[0] != 7*gi || got[1] != 7*gi {
		t.Errorf("free = %v, want all back", got)
	}
	m.mu.Lock()
	cells := m.static.machine[0].Cells
	m.mu.Unlock()
	if !reflect.DeepEqual(cells, []int{0}) {
		t.Errorf("node 0 cells = %v, want ungrouped [0]", cells)
	}
}

func TestRemoveInactiveWaitsOneRound(t *testing.T) {
	m, _ := newStatic(t, 1, 8*gi, gi)
	kept, gone := guaranteedPod("k", container("app", gi, false)), guaranteedPod("g", container("app", gi, false))
	for _, p := range []*v1.Pod{kept, gone} {
		if err := admit(t, m, p); err != nil {
			t.Fatal(err)
		}
	}
	m.RemoveInactive([]*v1.Pod{kept})
	if got := free(m)[0]; got != 5*gi {
		t.Fatalf("free after one round = %d, want nothing released yet", got)
	}
	m.RemoveInactive([]*v1.Pod{kept})
	if got := free(m)[0]; got != 6*gi {
		t.Errorf("free after two rounds = %d, want the gone pod's 1Gi back", got)
	}
	if mems(m, kept, "app") != "0" {
		t.Errorf("the active pod lost its memory")
	}
}

func TestHugePagesComeOffMemory(t *testing.T) {
	machine := topology.Synthetic(1, 1, 2, 1, 8*gi)
	opts := staticOptions(t.TempDir(), 1, 8*gi, gi)
	machine.NUMANodes[0].HugePages = map[v1.ResourceName]uint64{"hugepages-2Mi": 2 * gi, "hugepages-1Gi": 0}
	opts.Nodes = NodesOf(machine)
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	tables := m.static.machine[0].MemoryMap
	if got := tables[v1.ResourceMemory]; got.Allocatable != 5*gi || got.TotalMemSize != 8*gi {
		t.Errorf("memory = %+v, want 8Gi total, 5Gi allocatable", *got)
	}
	if got := tables["hugepages-2Mi"]; got == nil || got.Allocatable != 2*gi {
		t.Errorf("hugepages-2Mi = %+v, want 2Gi", got)
	}
	if _, ok := tables["hugepages-1Gi"]; !ok {
		t.Errorf("a page size without pages is still listed, as upstream lists it")
	}
}

func TestPodResourcesViews(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	all := m.AllocatableMemory()
	if len(all) != 2 || all[0].MemoryType != "memory" || all[0].Size_ != 7*gi || all[1].Topology.Nodes[0].ID != 1 {
		t.Errorf("allocatable = %v, want 7Gi of memory on each of nodes 0 and 1", all)
	}
	pod := guaranteedPod("v", container("app", gi, false))
	if err := admit(t, m, pod); err != nil {
		t.Fatal(err)
	}
	got := m.ContainerMemory(pod.UID, "app")
	if len(got) != 1 || got[0].Size_ != gi || got[0].Topology.Nodes[0].ID != 0 {
		t.Errorf("container memory = %v, want 1Gi on node 0", got)
	}
}

func TestPolicyNoneDoesNothing(t *testing.T) {
	m, err := New(Options{Policy: PolicyNone, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pod := guaranteedPod("n", container("app", gi, false))
	if h := m.ContainerHints(pod, &pod.Spec.Containers[0]); h != nil {
		t.Errorf("hints = %v", h)
	}
	if err := admit(t, m, pod); err != nil {
		t.Errorf("Allocate: %v", err)
	}
	if got := m.CreatingContainer(pod, &pod.Spec.Containers[0]); got != "" {
		t.Errorf("mems = %q", got)
	}
	if got := m.AllocatableMemory(); got == nil || len(got) != 0 {
		t.Errorf("allocatable = %v, want empty", got)
	}
}

func TestAffinityOnAnUnknownNodeIsRefused(t *testing.T) {
	m, _ := newStatic(t, 2, 8*gi, gi)
	pod := guaranteedPod("u", container("app", gi, false))
	err := m.Allocate(pod, &pod.Spec.Containers[0], topology.Hint{NUMANodes: topology.MaskOf(5), Preferred: true})
	if err == nil {
		t.Fatalf("memory placed on NUMA node 5 of a 2-node machine")
	}
	if got := free(m); got[0] != 7*gi || got[1] != 7*gi {
		t.Errorf("free = %v after a refusal, want untouched", got)
	}
}
