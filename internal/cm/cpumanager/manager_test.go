package cpumanager

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

// twoCPUs is this project's test machine: one socket, one NUMA node, two cores.
var twoCPUs = topology.Synthetic(1, 1, 2, 1, 1<<30)

func allocate(t *testing.T, m *Manager, p *v1.Pod) error {
	t.Helper()
	for i := range p.Spec.InitContainers {
		if err := m.Allocate(p, &p.Spec.InitContainers[i], topology.Hint{}); err != nil {
			return err
		}
	}
	for i := range p.Spec.Containers {
		if err := m.Allocate(p, &p.Spec.Containers[i], topology.Hint{}); err != nil {
			return err
		}
	}
	return nil
}

func TestStaticGivesGuaranteedContainerItsOwnCPU(t *testing.T) {
	m, _, _ := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	g := pod("g", "1", "app")
	if err := allocate(t, m, g); err != nil {
		t.Fatal(err)
	}
	if got := m.ContainerCPUs(g.UID, "app").String(); got != "1" {
		t.Errorf("Guaranteed container holds %q, want CPU 1", got)
	}
	if got := m.ContainerCpuset(g, &g.Spec.Containers[0]); got != "1" {
		t.Errorf("Guaranteed container is created on %q, want 1", got)
	}
	be := pod("be", "", "app")
	if err := allocate(t, m, be); err != nil {
		t.Fatal(err)
	}
	if got := m.ContainerCpuset(be, &be.Spec.Containers[0]); got != "0" {
		t.Errorf("BestEffort container is created on %q, want the shared pool 0", got)
	}
	if got := m.AllocatableCPUs().String(); got != "1" {
		t.Errorf("allocatable CPUs %q, want 1 (0 is reserved)", got)
	}
}

func TestStaticRefusesWhatItCannotPin(t *testing.T) {
	m, _, _ := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	if err := allocate(t, m, pod("first", "1", "app")); err != nil {
		t.Fatal(err)
	}
	second := pod("second", "1", "app")
	err := allocate(t, m, second)
	if err == nil || err.Error() != "not enough cpus available to satisfy request: requested=1, available=0" {
		t.Fatalf("second exclusive pod: err = %v", err)
	}
	if !m.ContainerCPUs(second.UID, "app").IsEmpty() {
		t.Error("a refused container holds CPUs")
	}
	if got := m.SharedCPUs().String(); got != "0" {
		t.Errorf("shared pool %q after a refusal, want 0", got)
	}
}

func TestStaticSharesWhatIsNotWholeOrGuaranteed(t *testing.T) {
	m, _, _ := newManager(t, topology.Synthetic(1, 1, 4, 1, 0), cmpolicy.CPUStatic, 1, nil)
	frac := pod("frac", "1500m", "app")
	burst := pod("burst", "", "app")
	burst.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resourceQty("2")}
	for _, p := range []*v1.Pod{frac, burst} {
		if err := allocate(t, m, p); err != nil {
			t.Fatal(err)
		}
		if got := m.ContainerCPUs(p.UID, "app"); !got.IsEmpty() {
			t.Errorf("%s holds %s, want the shared pool", p.Name, got)
		}
	}
	if got := m.SharedCPUs().String(); got != "0-3" {
		t.Errorf("shared pool %q, want 0-3", got)
	}
}

func TestRemovePodReturnsCPUsToThePool(t *testing.T) {
	m, _, _ := newManager(t, topology.Synthetic(1, 1, 4, 2, 0), cmpolicy.CPUStatic, 2, nil)
	g := pod("g", "4", "app")
	if err := allocate(t, m, g); err != nil {
		t.Fatal(err)
	}
	if got := m.ContainerCPUs(g.UID, "app").String(); got != "1-2,5-6" {
		t.Fatalf("4 CPUs on 4 cores with HT, 0 and 4 reserved: got %q, want two whole cores 1-2,5-6", got)
	}
	if got := m.SharedCPUs().String(); got != "0,3-4,7" {
		t.Errorf("shared pool %q", got)
	}
	m.RemovePod(g.UID)
	if got := m.SharedCPUs().String(); got != "0-7" {
		t.Errorf("shared pool after removal %q, want 0-7", got)
	}
}

func TestInitContainerCPUsGoToTheAppContainer(t *testing.T) {
	m, _, _ := newManager(t, topology.Synthetic(1, 1, 4, 1, 0), cmpolicy.CPUStatic, 1, nil)
	p := pod("p", "2", "app")
	p.Spec.InitContainers = []v1.Container{container("init", "2")}
	if err := allocate(t, m, p); err != nil {
		t.Fatal(err)
	}
	initCPUs, appCPUs := m.ContainerCPUs(p.UID, "init"), m.ContainerCPUs(p.UID, "app")
	if !initCPUs.Equals(appCPUs) || appCPUs.Size() != 2 {
		t.Errorf("init %s, app %s: want the app container to reuse the init container's 2 CPUs", initCPUs, appCPUs)
	}
	if got := m.SharedCPUs().Size(); got != 2 {
		t.Errorf("shared pool holds %d CPUs, want 2", got)
	}
}

func TestSidecarKeepsItsCPUs(t *testing.T) {
	m, _, _ := newManager(t, topology.Synthetic(1, 1, 4, 1, 0), cmpolicy.CPUStatic, 1, nil)
	p := pod("p", "1", "app")
	side := container("side", "1")
	side.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	p.Spec.InitContainers = []v1.Container{side}
	if err := allocate(t, m, p); err != nil {
		t.Fatal(err)
	}
	if s, a := m.ContainerCPUs(p.UID, "side"), m.ContainerCPUs(p.UID, "app"); !s.Intersection(a).IsEmpty() {
		t.Errorf("sidecar %s and app %s share CPUs; a sidecar runs beside the app", s, a)
	}
}

func TestAllocateWithinTheAffinity(t *testing.T) {
	m, _, _ := newManager(t, topology.Synthetic(1, 2, 2, 1, 0), cmpolicy.CPUStatic, 1, nil)
	p := pod("p", "2", "app")
	if err := m.Allocate(p, &p.Spec.Containers[0], topology.Hint{NUMANodes: topology.MaskOf(1), Preferred: true}); err != nil {
		t.Fatal(err)
	}
	if got := m.ContainerCPUs(p.UID, "app").String(); got != "2-3" {
		t.Errorf("affinity NUMA 1: got %q, want 2-3", got)
	}
}

func TestFullPCPUsOnly(t *testing.T) {
	opts := map[string]string{cmpolicy.OptionFullPCPUsOnly: "true"}
	m, _, _ := newManager(t, topology.Synthetic(1, 1, 2, 2, 0), cmpolicy.CPUStatic, 1, opts)
	odd := pod("odd", "1", "app")
	err := allocate(t, m, odd)
	var smt SMTAlignmentError
	if !errors.As(err, &smt) || smt.Reason() != "SMTAlignmentError" ||
		err.Error() != "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2" {
		t.Fatalf("1 CPU with 2 threads per core: err = %v", err)
	}
	// CPU 0 is reserved, so its sibling 2 is out of reach: one whole core (1,3) is left.
	if err := allocate(t, m, pod("even", "2", "app")); err != nil {
		t.Fatal(err)
	}
	err = allocate(t, m, pod("more", "2", "app"))
	if !errors.As(err, &smt) || !smt.CausedByPhysicalCPUs {
		t.Fatalf("no whole core left: err = %v", err)
	}
}

func TestNonePolicyDoesNothing(t *testing.T) {
	m, _, dir := newManager(t, twoCPUs, cmpolicy.CPUNone, 0, nil)
	g := pod("g", "1", "app")
	if err := allocate(t, m, g); err != nil {
		t.Fatal(err)
	}
	if got := m.ContainerCpuset(g, &g.Spec.Containers[0]); got != "" {
		t.Errorf("none policy pins to %q, want the runtime's default", got)
	}
	if h := m.ContainerHints(g, &g.Spec.Containers[0]); h != nil {
		t.Errorf("none policy hints %v", h)
	}
	if !m.AllocatableCPUs().IsEmpty() {
		t.Error("none policy has allocatable CPUs")
	}
	if f := readState(t, dir); f.PolicyName != "none" || f.DefaultCPUSet != "" {
		t.Errorf("state file %+v", f)
	}
}

func TestStaticNeedsReservedCPUs(t *testing.T) {
	_, err := New(managerOptions(t.TempDir(), twoCPUs, cmpolicy.CPUStatic, 0, nil, newNode()))
	if err == nil || !strings.Contains(err.Error(), "the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero") {
		t.Fatalf("err = %v", err)
	}
}

func TestReservedSystemCPUs(t *testing.T) {
	opts := managerOptions(t.TempDir(), twoCPUs, cmpolicy.CPUStatic, 1, nil, newNode())
	opts.ReservedCPUs = cpuset.New(1)
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.AllocatableCPUs().String(); got != "0" {
		t.Errorf("reservedSystemCPUs 1: allocatable %q, want 0", got)
	}
	opts.ReservedCPUs, opts.NumReserved, opts.StateDir = cpuset.New(0, 1), 1, t.TempDir()
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "unable to reserve the required amount of CPUs") {
		t.Errorf("mismatched reservation: err = %v", err)
	}
	opts.ReservedCPUs, opts.StateDir = cpuset.New(5), t.TempDir()
	if _, err := New(opts); err == nil {
		t.Error("a reserved CPU the machine lacks was accepted")
	}
}

// The gates reach New, not only the configuration check: a beta option with the beta gate off refuses
// the start.
func TestNewRefusesAnOptionItsGateTurnsOff(t *testing.T) {
	opts := managerOptions(t.TempDir(), twoCPUs, cmpolicy.CPUStatic, 1, map[string]string{cmpolicy.OptionStrictCPUReservation: "true"}, newNode())
	opts.OptionGates = cmpolicy.CPUOptionGates{}
	if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "Beta-level Options not enabled") {
		t.Fatalf("err = %v", err)
	}
}

func TestPodHasExclusiveCPUs(t *testing.T) {
	m, g := pinnedAndShared(t)
	if !m.PodHasExclusiveCPUs(g) {
		t.Error("a pod with a pinned container has no exclusive CPUs")
	}
	if !m.ContainerCPUs(g.UID, "frac").IsEmpty() {
		t.Error("a fractional container holds exclusive CPUs")
	}
	frac := pod("f", "1500m", "app")
	if err := allocate(t, m, frac); err != nil {
		t.Fatal(err)
	}
	if m.PodHasExclusiveCPUs(frac) {
		t.Error("a pod of fractional requests has exclusive CPUs")
	}
	none, _, _ := newManager(t, twoCPUs, cmpolicy.CPUNone, 0, nil)
	if none.PodHasExclusiveCPUs(g) {
		t.Error("the none policy reports exclusive CPUs")
	}
}
