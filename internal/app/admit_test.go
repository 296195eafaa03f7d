package app

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/cm/cpumanager"
	"github.com/nodelet/nodelet/internal/cm/memorymanager"
	"github.com/nodelet/nodelet/internal/cm/topologymanager"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/pod/admission"
	"github.com/nodelet/nodelet/internal/pod/status"
)

func guaranteedPod(name string, cpu, memory string) *v1.Pod {
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}}}
}

// staticManagers are the static CPU and memory managers of a 4-CPU machine with one NUMA node of
// 4Gi (1Gi reserved), behind a single-numa-node topology manager, as admission uses them.
func staticManagers(t *testing.T) (*cpumanager.Manager, *memorymanager.Manager, *topologymanager.Manager) {
	t.Helper()
	machine := topology.Synthetic(1, 1, 4, 1, 4<<30)
	dir := t.TempDir()
	cpus, err := cpumanager.New(cpumanager.Options{Policy: cmpolicy.CPUStatic, Machine: machine, NumReserved: 1, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	memory, err := memorymanager.New(memorymanager.Options{
		Policy: memorymanager.PolicyStatic, StateDir: dir,
		Nodes:           []memorymanager.NUMAMemory{{ID: 0, Memory: 4 << 30}},
		Reserved:        []kubeletconfigv1beta1.MemoryReservation{{NumaNode: 0, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}},
		NodeReservation: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := topologymanager.New(machine, topologymanager.Config{Policy: topologymanager.PolicySingleNUMANode, Scope: topologymanager.ScopeContainer}, cpus, memory)
	if err != nil {
		t.Fatal(err)
	}
	return cpus, memory, tm
}

// The resource managers decide before the resource fit, as upstream: a Guaranteed pod asking
// for more memory than the NUMA node holds gets the memory manager's refusal, not OutOfmemory.
func TestMemoryManagerRefusalComesBeforeTheResourceFit(t *testing.T) {
	_, _, tm := staticManagers(t)
	a := &admission.Admitter{Statuses: status.NewManager(nil), Topology: tm, Allocatable: func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("3Gi")}
	}}
	// On one NUMA node single-numa-node leaves the placement to the memory manager (the whole
	// machine is "anywhere"), which finds no node with enough memory, as upstream.
	ok, reason, msg := a.Admit(guaranteedPod("huge", "1", "8Gi"), nil)
	want := "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected"
	if ok || reason != "UnexpectedAdmissionError" || msg != want {
		t.Errorf("pod over the NUMA node's memory: ok=%v %q %q, want UnexpectedAdmissionError %q", ok, reason, msg, want)
	}
}

// What the CPU and memory managers set aside for a pod a later check refuses is free again.
func TestLaterRefusalFreesCPUsAndMemory(t *testing.T) {
	cpus, memory, tm := staticManagers(t)
	a := &admission.Admitter{Statuses: status.NewManager(nil), Topology: tm, MaxPods: 1}
	other := guaranteedPod("other", "100m", "64Mi")
	refused := guaranteedPod("refused", "3", "3Gi")
	if ok, reason, _ := a.Admit(refused, []*v1.Pod{other}); ok || reason != "OutOfpods" {
		t.Fatalf("pod beyond maxPods: ok=%v %q, want OutOfpods", ok, reason)
	}
	if got := cpus.ContainerCPUs(refused.UID, "c"); !got.IsEmpty() {
		t.Errorf("the refused pod keeps CPUs %s", got)
	}
	if got := memory.ContainerMemory(refused.UID, "c"); len(got) != 0 {
		t.Errorf("the refused pod keeps memory %v", got)
	}
	// All of it is there for the next pod: the 3 CPUs and 3Gi the node can give.
	again := guaranteedPod("again", "3", "3Gi")
	if ok, reason, msg := a.Admit(again, nil); !ok {
		t.Fatalf("the same request after the refusal: %s %s", reason, msg)
	}
	if got := cpus.ContainerCPUs(again.UID, "c"); got.Size() != 3 {
		t.Errorf("the admitted pod got CPUs %s, want 3", got)
	}
}
