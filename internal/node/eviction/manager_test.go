package eviction

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	testclock "k8s.io/utils/clock/testing"
)

const mi = 1 << 20

// fakeSummary is a node with settable memory and disk headroom and per-pod usage.
type fakeSummary struct {
	memAvail, memWorking uint64
	fsAvail, fsCap       uint64
	pods                 []statsapi.PodStats
	// afterReclaim, when set, is the disk available once a reclaimer ran.
	afterReclaim *uint64
	// podsAvail, when set, is what the pods cgroup's limit leaves (its system container).
	podsAvail *uint64
	// memUsage, when set, is the node's memory usage (the working set plus inactive file pages).
	memUsage *uint64
	// reads, when set, is told of each read without blocking.
	reads chan struct{}
}

func (f *fakeSummary) Summary(context.Context) (*statsapi.Summary, error) {
	inodes, free := uint64(1000), uint64(900)
	s := &statsapi.Summary{
		Node: statsapi.NodeStats{
			Memory: &statsapi.MemoryStats{AvailableBytes: &f.memAvail, WorkingSetBytes: &f.memWorking, UsageBytes: f.memUsage},
			Fs:     &statsapi.FsStats{AvailableBytes: &f.fsAvail, CapacityBytes: &f.fsCap, Inodes: &inodes, InodesFree: &free},
		},
		Pods: f.pods,
	}
	select {
	case f.reads <- struct{}{}:
	default:
	}
	if f.podsAvail != nil {
		s.Node.SystemContainers = []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods,
			Memory: &statsapi.MemoryStats{AvailableBytes: f.podsAvail, WorkingSetBytes: &f.memWorking}}}
	}
	return s, nil
}

type evicted struct {
	name         string
	grace        int64
	msg          string
	annotations  map[string]string
	nodePressure bool
}

type env struct {
	m       *Manager
	sum     *fakeSummary
	clock   *testclock.FakeClock
	pods    []*v1.Pod
	evicted []evicted
	signals []string
}

// newEnv builds a manager on fakes; each option may add to its Deps before New.
func newEnv(t *testing.T, cfg Config, options ...func(*Deps)) *env {
	t.Helper()
	e := &env{sum: &fakeSummary{memAvail: 8000 * mi, memWorking: 2000 * mi, fsAvail: 50 << 30, fsCap: 100 << 30},
		clock: testclock.NewFakeClock(time.Unix(1000, 0))}
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = time.Minute
	}
	deps := Deps{
		Summary:    e.sum,
		ActivePods: func() []*v1.Pod { return e.pods },
		Evict: func(p *v1.Pod, grace int64, why Eviction) {
			e.evicted = append(e.evicted, evicted{p.Name, grace, why.Message, why.Annotations, why.NodePressure})
		},
		Critical: func(p *v1.Pod) bool { return p.Annotations["critical"] == "true" },
		OnEvict:  func(s string) { e.signals = append(e.signals, s) },
		DiskReclaimers: []Reclaimer{func(context.Context) error {
			if e.sum.afterReclaim != nil {
				e.sum.fsAvail = *e.sum.afterReclaim
			}
			return nil
		}},
		Clock: e.clock,
	}
	for _, option := range options {
		option(&deps)
	}
	m, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	return e
}

// addPod adds a running pod using memWS of memory with the given memory request (0: none).
func (e *env) addPod(name string, prio int32, memWS, memReq int64) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: "c"}}}}
	if memReq > 0 {
		q := *resource.NewQuantity(memReq, resource.BinarySI)
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: q}, Limits: v1.ResourceList{v1.ResourceMemory: q}}
	}
	ws := uint64(memWS)
	e.pods = append(e.pods, p)
	e.sum.pods = append(e.sum.pods, statsapi.PodStats{
		PodRef:     statsapi.PodReference{Name: name, Namespace: "ns", UID: name},
		Memory:     &statsapi.MemoryStats{WorkingSetBytes: &ws},
		Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: &ws}}},
	})
	return p
}

func TestHardMemoryThresholdEvictsBestEffortOverGuaranteed(t *testing.T) {
	e := newEnv(t, Config{Hard: map[string]string{"memory.available": "500Mi"}})
	e.addPod("guaranteed", 0, 900*mi, 1000*mi)
	e.addPod("besteffort", 0, 300*mi, 0)
	e.addPod("important", 1000, 600*mi, 0)
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 0 {
		t.Fatalf("evicted %v with 8000Mi available", e.evicted)
	}
	e.sum.memAvail = 400 * mi
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 1 || e.evicted[0].name != "besteffort" {
		t.Fatalf("want only besteffort evicted (over its request, lowest priority), got %v", e.evicted)
	}
	got := e.evicted[0]
	if got.grace != immediateGracePeriod || e.signals[0] != "memory.available" {
		t.Errorf("grace %d signal %v, want %d memory.available", got.grace, e.signals, immediateGracePeriod)
	}
	want := "The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. Container c was using 300Mi, request is 0, has larger consumption of memory. "
	if got.msg != want {
		t.Errorf("message\n got %q\nwant %q", got.msg, want)
	}
	wantAnnotations := map[string]string{StarvedResourceKey: "memory", OffendingContainersKey: "c", OffendingContainersUsageKey: "300Mi"}
	if !maps.Equal(got.annotations, wantAnnotations) || !got.nodePressure {
		t.Errorf("event annotations %v node pressure %v, want %v true", got.annotations, got.nodePressure, wantAnnotations)
	}
	if mem, disk, pid := e.m.Pressure(); !mem || disk || pid {
		t.Errorf("pressure %v %v %v, want memory only", mem, disk, pid)
	}
}

func TestSoftThresholdWaitsForGracePeriodAndCapsPodGrace(t *testing.T) {
	e := newEnv(t, Config{
		Soft: map[string]string{"memory.available": "1Gi"}, SoftGracePeriod: map[string]string{"memory.available": "30s"},
		MaxPodGracePeriodSeconds: 20,
	})
	e.addPod("a", 0, 500*mi, 0)
	e.sum.memAvail = 900 * mi
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 0 {
		t.Fatal("soft threshold acted before its grace period")
	}
	if mem, _, _ := e.m.Pressure(); !mem {
		t.Error("a crossed soft threshold already sets MemoryPressure")
	}
	e.clock.Step(31 * time.Second)
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 1 || e.evicted[0].grace != 20 {
		t.Fatalf("want one eviction with grace 20 (evictionMaxPodGracePeriod), got %v", e.evicted)
	}
}

func TestPressureStaysForTransitionPeriodAndNeedsMinimumReclaim(t *testing.T) {
	e := newEnv(t, Config{Hard: map[string]string{"memory.available": "500Mi"},
		MinimumReclaim: map[string]string{"memory.available": "200Mi"}, PressureTransitionPeriod: time.Minute})
	e.sum.memAvail = 400 * mi
	e.m.Synchronize(context.Background())
	e.sum.memAvail = 600 * mi // above the threshold but not above threshold + minimum reclaim
	e.clock.Step(2 * time.Minute)
	e.m.Synchronize(context.Background())
	if mem, _, _ := e.m.Pressure(); !mem {
		t.Fatal("pressure cleared before the minimum reclaim was reached")
	}
	e.sum.memAvail = 800 * mi
	e.clock.Step(10 * time.Second)
	e.m.Synchronize(context.Background())
	if mem, _, _ := e.m.Pressure(); !mem {
		t.Fatal("pressure cleared before the transition period")
	}
	e.clock.Step(time.Minute)
	e.m.Synchronize(context.Background())
	if mem, _, _ := e.m.Pressure(); mem {
		t.Fatal("pressure still set a transition period after it resolved")
	}
}

func TestDiskThresholdReclaimsNodeDiskBeforeEvicting(t *testing.T) {
	e := newEnv(t, Config{Hard: map[string]string{"nodefs.available": "10%"}})
	e.addPod("a", 0, 100*mi, 0)
	e.sum.fsAvail = 5 << 30
	freed := uint64(20 << 30)
	e.sum.afterReclaim = &freed
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 0 {
		t.Fatalf("evicted %v although reclaiming images and containers freed enough", e.evicted)
	}
	e.sum.fsAvail, e.sum.afterReclaim = 5<<30, nil
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 1 || !strings.Contains(e.evicted[0].msg, "low on resource: ephemeral-storage") {
		t.Fatalf("want an ephemeral-storage eviction when reclaim is not enough, got %v", e.evicted)
	}
	if _, disk, _ := e.m.Pressure(); !disk {
		t.Error("no DiskPressure")
	}
}

func TestCriticalPodsAreNeverEvictedForPressure(t *testing.T) {
	e := newEnv(t, Config{Hard: map[string]string{"memory.available": "500Mi"}})
	p := e.addPod("static", 0, 3000*mi, 0)
	p.Annotations = map[string]string{"critical": "true"}
	e.addPod("small", 0, 10*mi, 0)
	e.sum.memAvail = 100 * mi
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 1 || e.evicted[0].name != "small" {
		t.Fatalf("want the non-critical pod evicted, got %v", e.evicted)
	}
}

func TestEmptyDirOverSizeLimitIsEvictedWithoutPressure(t *testing.T) {
	e := newEnv(t, Config{LocalStorageCapacityIsolation: true})
	p := e.addPod("filler", 0, 10*mi, 0)
	limit := resource.MustParse("10Mi")
	p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	used := uint64(20 * mi)
	e.sum.pods[0].VolumeStats = []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: &used}}}
	e.m.Synchronize(context.Background())
	want := `Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". `
	if len(e.evicted) != 1 || e.evicted[0].msg != want || e.evicted[0].grace != 0 || e.evicted[0].annotations != nil || e.evicted[0].nodePressure {
		t.Fatalf("got %v, want one eviction %q with grace 0", e.evicted, want)
	}
}

func TestAdmitUnderPressure(t *testing.T) {
	e := newEnv(t, Config{Hard: map[string]string{"memory.available": "500Mi"}})
	besteffort := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	burstable := besteffort.DeepCopy()
	burstable.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}
	tolerant := besteffort.DeepCopy()
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	if ok, _, _ := e.m.Admit(besteffort); !ok {
		t.Fatal("refused a pod with no pressure")
	}
	e.sum.memAvail = 100 * mi
	e.m.Synchronize(context.Background())
	ok, reason, msg := e.m.Admit(besteffort)
	if ok || reason != "Evicted" || msg != "The node had condition: [MemoryPressure]. " {
		t.Errorf("BestEffort under memory pressure: %v %q %q", ok, reason, msg)
	}
	for name, p := range map[string]*v1.Pod{"burstable": burstable, "tolerating": tolerant} {
		if ok, _, _ := e.m.Admit(p); !ok {
			t.Errorf("%s pod refused under memory pressure", name)
		}
	}
}

func TestAllocatableMemoryThresholdFollowsMemoryAvailable(t *testing.T) {
	cfg := Config{Hard: map[string]string{"memory.available": "500Mi"}, PodsAllocatableEnforced: true}
	e := newEnv(t, cfg)
	e.addPod("besteffort", 0, 300*mi, 0)
	podsAvail := uint64(600 * mi)
	e.sum.podsAvail = &podsAvail
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 0 {
		t.Fatalf("evicted %v with 600Mi left under the pods limit", e.evicted)
	}
	// The node has plenty (8000Mi); the pods' cgroup limit is what runs short.
	podsAvail = 100 * mi
	e.m.Synchronize(context.Background())
	if len(e.evicted) != 1 || e.signals[0] != "allocatableMemory.available" {
		t.Fatalf("evicted %v on signals %v, want besteffort on allocatableMemory.available", e.evicted, e.signals)
	}
	if !strings.HasPrefix(e.evicted[0].msg, "The node was low on resource: memory. Threshold quantity: 500Mi, available: 100Mi.") {
		t.Errorf("message %q", e.evicted[0].msg)
	}
	if mem, _, _ := e.m.Pressure(); !mem {
		t.Error("no MemoryPressure while allocatable memory is short")
	}
	// Without enforcement of the pods' allocatable there is no such threshold.
	cfg.PodsAllocatableEnforced = false
	ts, err := ParseThresholds(cfg)
	if err != nil || len(ts) != 1 || ts[0].Signal != MemoryAvailable {
		t.Errorf("thresholds without pods enforcement: %v %v", ts, err)
	}
}
