package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/cm/cpumanager"
	"github.com/nodelet/nodelet/internal/cm/memorymanager"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/testutil"
)

func TestReservedCPUCountRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		kube, system map[string]string
		want         int
	}{
		{nil, nil, 0},
		{map[string]string{"cpu": "200m"}, map[string]string{"cpu": "300m"}, 1},
		{map[string]string{"cpu": "1"}, map[string]string{"cpu": "1001m", "memory": "1Gi"}, 3},
		{nil, map[string]string{"cpu": "2"}, 2},
	} {
		kc := &kubeletconfigv1beta1.KubeletConfiguration{KubeReserved: tc.kube, SystemReserved: tc.system}
		got, err := reservedCPUCount(kc)
		if err != nil || got != tc.want {
			t.Errorf("kube %v system %v: %d, %v; want %d", tc.kube, tc.system, got, err, tc.want)
		}
	}
}

// The whole node with the static CPU manager on the fake runtime and this machine's CPUs, half
// a CPU reserved (the lowest core): a Guaranteed static pod is created on one CPU of its own,
// a BestEffort pod on the shared pool, which the reconcile loop narrows on the running
// container; a restart keeps both containers and their CPUs.
func TestStaticCPUManagerPinsContainers(t *testing.T) {
	if goruntime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs: one reserved, one to give away")
	}
	cfg, fake, dir := testConfig(t, "--cpu-manager-policy=static", "--system-reserved=cpu=500m", "--cpu-manager-reconcile-period=100ms")
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, cfg) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}
	stop := run()
	write := func(name, resources string) {
		pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},
"spec":{"terminationGracePeriodSeconds":1,
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"]%s}]}}`, name, resources)
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(pod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pinned", `,"resources":{"requests":{"cpu":"1","memory":"32Mi"},"limits":{"cpu":"1","memory":"32Mi"}}`)
	testutil.Eventually(t, "pinned running", func() bool { return running(fake, "pinned") != nil })
	write("shared", "")
	testutil.Eventually(t, "shared running", func() bool { return running(fake, "shared") != nil })
	cpusetOf := func(pod string) string {
		c := running(fake, pod)
		if c == nil {
			return ""
		}
		current, _ := fake.Container(c.ID)
		return current.Config.GetLinux().GetResources().GetCpusetCpus()
	}
	pinned, err := cpuset.Parse(cpusetOf("pinned"))
	if err != nil || pinned.Size() != 1 || pinned.Contains(0) {
		t.Fatalf("Guaranteed container created on %q (%v), want one CPU other than the reserved 0", cpusetOf("pinned"), err)
	}
	testutil.Eventually(t, "shared pool without the pinned CPU", func() bool {
		shared, err := cpuset.Parse(cpusetOf("shared"))
		return err == nil && shared.Contains(0) && !shared.Contains(pinned.List()[0])
	})
	ids := map[string]string{"pinned": running(fake, "pinned").ID, "shared": running(fake, "shared").ID}
	stop()

	stop = run()
	defer stop()
	time.Sleep(time.Second) // several reconcile passes and syncs
	for pod, id := range ids {
		if c := running(fake, pod); c == nil || c.ID != id {
			t.Errorf("%s: container %s replaced across the restart by %v", pod, id, c)
		}
	}
	if got := cpusetOf("pinned"); got != pinned.String() {
		t.Errorf("after the restart the Guaranteed container is on %q, want %s", got, pinned)
	}
}

// DisableCPUQuotaWithExclusiveCPUs reaches the runtime's and the pod cgroups' hooks: on, a
// container holding exclusive CPUs (and its pod) is exempt from the CFS quota and a shared one
// is not; off, there is no hook (every limit enforced).
func TestQuotaExemptionFollowsItsGate(t *testing.T) {
	cpus, err := cpumanager.New(cpumanager.Options{
		Policy: cmpolicy.CPUStatic, OptionGates: cmpolicy.DefaultCPUOptionGates,
		Machine: topology.Synthetic(1, 1, 2, 1, 1<<30), NumReserved: 1, StateDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	limits := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("64Mi")}
	pinned := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pinned", UID: "pinned-uid"}, Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "c", Resources: v1.ResourceRequirements{Requests: limits, Limits: limits}},
	}}}
	if err := cpus.Allocate(pinned, &pinned.Spec.Containers[0], topology.Hint{}); err != nil {
		t.Fatal(err)
	}
	shared := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shared", UID: "shared-uid"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}

	n := &agent{cfg: &config.Config{Settings: config.Settings{DisableCPUQuotaWithExclusiveCPUs: true}}, cpus: cpus, cm: &cm.ContainerManager{}}
	hooks, pod := n.podHooks(), n.podQuotaExempt()
	quota := func(p *v1.Pod) int64 {
		res := &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuQuota: 100000}
		hooks.ApplyResources(p, &p.Spec.Containers[0], res)
		return res.CpuQuota
	}
	if quota(pinned) != -1 || !pod(pinned) {
		t.Error("gate on: the pinned container or its pod keeps its quota")
	}
	if quota(shared) != 100000 || pod(shared) {
		t.Error("gate on: a shared container or its pod loses its quota")
	}
	n.cfg.DisableCPUQuotaWithExclusiveCPUs = false
	if len(n.podHooks().Resources) != 0 || n.podQuotaExempt() != nil {
		t.Error("gate off: a quota exemption hook is set")
	}
}

// An in-place resize of a Guaranteed pod is refused under the static CPU policy with upstream's
// message, which comes before the memory manager's; InPlacePodVerticalScalingExclusiveCPUs
// lifts both refusals, and a Burstable pod is never refused.
func TestResizeBesidePinnedResources(t *testing.T) {
	machine := topology.Synthetic(1, 1, 2, 1, 1<<30)
	cpus, err := cpumanager.New(cpumanager.Options{
		Policy: cmpolicy.CPUStatic, OptionGates: cmpolicy.DefaultCPUOptionGates,
		Machine: machine, NumReserved: 1, StateDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	reserved := v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi")}
	memory, err := memorymanager.New(memorymanager.Options{
		Policy: memorymanager.PolicyStatic, Nodes: memorymanager.NodesOf(machine), StateDir: t.TempDir(),
		Reserved:        []kubeletconfigv1beta1.MemoryReservation{{NumaNode: 0, Limits: reserved}},
		NodeReservation: reserved,
	})
	if err != nil {
		t.Fatal(err)
	}
	limits := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("64Mi")}
	guaranteed := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: limits, Limits: limits}}}}}
	burstable := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: limits}}}}}

	n := &agent{cfg: &config.Config{}, cpus: cpus, memory: memory}
	if got, want := n.resizePinned(guaranteed), "Resize is infeasible for Guaranteed Pods alongside CPU Manager static policy"; got != want {
		t.Errorf("static CPU and memory policies: %q, want %q", got, want)
	}
	if got := n.resizePinned(burstable); got != "" {
		t.Errorf("Burstable pod refused: %q", got)
	}
	n.cpus = nil
	if got, want := n.resizePinned(guaranteed), "Resize is infeasible for Guaranteed Pods alongside Memory Manager static policy"; got != want {
		t.Errorf("static memory policy alone: %q, want %q", got, want)
	}
	n.cpus, n.cfg.ResizeExclusiveCPUs = cpus, true
	if got := n.resizePinned(guaranteed); got != "" {
		t.Errorf("InPlacePodVerticalScalingExclusiveCPUs on: still refused with %q", got)
	}
}
