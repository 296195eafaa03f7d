package cm

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"github.com/opencontainers/cgroups/systemd"
	"k8s.io/apimachinery/pkg/types"
)

// fakeSystemd stands for systemd on the D-Bus: it records each unit call and, like systemd,
// makes a started slice's cgroup in the fake tree (enabling the parent's controllers on v2)
// and removes a stopped one's.
type fakeSystemd struct {
	tree  *fakeCgroupFS
	calls []string                  // "start X wants=P", "set X", "stop X"
	props map[string]map[string]any // the last properties each unit was given
	units map[string]bool           // the slices started and not stopped
	fail  map[string]*godbus.Error  // a call's method name → the error it returns
}

func newFakeSystemd(tree *fakeCgroupFS) *fakeSystemd {
	return &fakeSystemd{tree: tree, props: map[string]map[string]any{}, units: map[string]bool{}, fail: map[string]*godbus.Error{}}
}

// dirs are where the slice's cgroup is in each hierarchy of the fake tree.
func (s *fakeSystemd) dirs(slice string) ([]string, error) {
	rel, err := systemd.ExpandSlice(slice) // the library's reading of a slice name
	if err != nil {
		return nil, err
	}
	if s.tree.v2 {
		return []string{filepath.Join(s.tree.root, rel)}, nil
	}
	var out []string
	for mount := range s.tree.v1Files {
		if mount != "unified" {
			out = append(out, filepath.Join(s.tree.root, mount, rel))
		}
	}
	return out, nil
}

func (s *fakeSystemd) StartTransientUnitContext(_ context.Context, name, mode string, props []sddbus.Property, done chan<- string) (int, error) {
	wants := ""
	got := map[string]any{}
	for _, p := range props {
		got[p.Name] = p.Value.Value()
		if p.Name == "Wants" {
			wants = strings.Join(p.Value.Value().([]string), ",")
		}
	}
	s.calls = append(s.calls, fmt.Sprintf("start %s wants=%s", name, wants))
	if err := s.fail["StartTransientUnit"]; err != nil {
		return 0, *err
	}
	if s.units[name] {
		return 0, godbus.Error{Name: "org.freedesktop.systemd1.UnitExists"}
	}
	dirs, err := s.dirs(name)
	if err != nil {
		return 0, err
	}
	for _, dir := range dirs {
		if s.tree.v2 {
			if err := s.tree.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"), "+cpu +memory +pids +cpuset +io"); err != nil {
				return 0, err
			}
		}
		if err := s.tree.Mkdir(dir); err != nil {
			return 0, err
		}
	}
	s.units[name] = true
	s.props[name] = got
	done <- "done"
	return 1, nil
}

func (s *fakeSystemd) SetUnitPropertiesContext(_ context.Context, name string, runtime bool, props ...sddbus.Property) error {
	s.calls = append(s.calls, "set "+name)
	if !s.units[name] {
		return godbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit"}
	}
	for _, p := range props {
		s.props[name][p.Name] = p.Value.Value()
	}
	return nil
}

func (s *fakeSystemd) StopUnitContext(_ context.Context, name, mode string, done chan<- string) (int, error) {
	s.calls = append(s.calls, "stop "+name)
	if !s.units[name] {
		return 0, godbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit"}
	}
	dirs, err := s.dirs(name)
	if err != nil {
		return 0, err
	}
	for _, dir := range dirs {
		if err := s.tree.Rmdir(dir); err != nil {
			done <- "failed"
			return 1, nil
		}
	}
	delete(s.units, name)
	done <- "done"
	return 1, nil
}

// callsLike are the recorded calls that start with prefix.
func (s *fakeSystemd) callsLike(prefix string) []string {
	var out []string
	for _, c := range s.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func startSystemd(t *testing.T, tree *fakeCgroupFS, opts Options) (*QOSCgroups, *fakeSystemd) {
	t.Helper()
	sd := newFakeSystemd(tree)
	opts.systemd, opts.systemdCtx = sd, t.Context()
	return startManager(t, tree, opts), sd
}

func TestSystemdStartMakesTheQoSSlicesAsUpstreamNamesThem(t *testing.T) {
	tree := newFakeV2(t)
	_, sd := startSystemd(t, tree, Options{NodeMilliCPU: 2000})
	want := []string{
		"start kubepods.slice wants=-.slice",
		"start kubepods-burstable.slice wants=kubepods.slice",
		"start kubepods-besteffort.slice wants=kubepods.slice",
	}
	if got := sd.callsLike("start"); !slices.Equal(got, want) {
		t.Errorf("started %q, want %q", got, want)
	}
	kubepods := sd.props["kubepods.slice"]
	for name, value := range map[string]any{"DefaultDependencies": false, "MemoryAccounting": true, "CPUAccounting": true, "TasksAccounting": true, "CPUWeight": uint64(sharesToWeight(2048))} {
		if kubepods[name] != value {
			t.Errorf("kubepods.slice %s = %v, want %v", name, kubepods[name], value)
		}
	}
	if got := sd.props["kubepods-besteffort.slice"]["CPUWeight"]; got != uint64(1) {
		t.Errorf("besteffort CPUWeight %v, want 1", got)
	}
	if got := readValue(t, filepath.Join(tree.root, "kubepods.slice/kubepods-besteffort.slice/cpu.weight")); got != "1" {
		t.Errorf("besteffort cpu.weight file %q, want 1", got)
	}
}

func TestSystemdPodSliceLimitsResizeAndRemoval(t *testing.T) {
	tree := newFakeV2(t)
	m, sd := startSystemd(t, tree, Options{PodPidsLimit: 50})
	pod := burstable("1234-abcd", "100m")
	parent, err := m.EnsurePod(pod)
	if err != nil {
		t.Fatal(err)
	}
	const slice = "kubepods-burstable-pod1234_abcd.slice"
	if parent != slice {
		t.Errorf("cgroup parent %q, want %q (the runtime's systemd driver takes the slice name)", parent, slice)
	}
	if got := sd.callsLike("start " + slice); !slices.Equal(got, []string{"start " + slice + " wants=kubepods-burstable.slice"}) {
		t.Errorf("pod slice start calls %q", got)
	}
	for name, value := range map[string]any{"CPUWeight": uint64(4), "CPUQuotaPerSecUSec": uint64(200000), "MemoryMax": uint64(200 << 20), "TasksMax": uint64(50)} {
		if got := sd.props[slice][name]; got != value {
			t.Errorf("%s %s = %v, want %v", slice, name, got, value)
		}
	}
	dir := filepath.Join(tree.root, "kubepods.slice/kubepods-burstable.slice", slice)
	for file, want := range map[string]string{"cpu.weight": "4", "cpu.max": "20000 100000", "memory.max": "209715200", "pids.max": "50"} {
		if got := readValue(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if got := m.PodCgroup(pod.UID); got != "/kubepods.slice/kubepods-burstable.slice/"+slice {
		t.Errorf("PodCgroup %q", got)
	}
	if uids, err := m.PodUIDs(); err != nil || !slices.Equal(uids, []types.UID{"1234-abcd"}) {
		t.Errorf("PodUIDs %v, %v", uids, err)
	}

	// An in-place resize sets the slice's properties and its files.
	sd.calls = nil
	if err := m.SetPodConfig(pod, PodConfig{Memory: 300 << 20}); err != nil {
		t.Fatal(err)
	}
	if got := sd.callsLike("set"); !slices.Contains(got, "set "+slice) {
		t.Errorf("resize calls %q, want set %s", sd.calls, slice)
	}
	if got := sd.props[slice]["MemoryMax"]; got != uint64(300<<20) {
		t.Errorf("MemoryMax after resize %v", got)
	}
	if got := readValue(t, filepath.Join(dir, "memory.max")); got != "314572800" {
		t.Errorf("memory.max after resize %q", got)
	}
	current, _, err := m.PodConfig(pod)
	if err != nil || current.Memory != 300<<20 {
		t.Errorf("PodConfig after resize: %+v, %v", current, err)
	}

	// Removal stops the slice; systemd takes its cgroup.
	if err := m.RemovePod(pod.UID); err != nil {
		t.Fatal(err)
	}
	if got := sd.callsLike("stop"); !slices.Equal(got, []string{"stop " + slice}) {
		t.Errorf("stop calls %q", got)
	}
	if exists(dir) {
		t.Error("the pod slice's cgroup is still there")
	}
}

func TestSystemdUnlimitedIsInfinityAndV1NamesItsProperties(t *testing.T) {
	tree := newFakeV1(t)
	m, sd := startSystemd(t, tree, Options{})
	parent, err := m.EnsurePod(bestEffort("be"))
	if err != nil {
		t.Fatal(err)
	}
	if parent != "kubepods-besteffort-podbe.slice" {
		t.Errorf("cgroup parent %q", parent)
	}
	props := sd.props[parent]
	for name, value := range map[string]any{"CPUShares": uint64(minShares), "MemoryLimit": uint64(math.MaxUint64), "CPUQuotaPerSecUSec": uint64(math.MaxUint64)} {
		if props[name] != value {
			t.Errorf("%s = %v, want %v", name, props[name], value)
		}
	}
	if got := readValue(t, filepath.Join(tree.root, "cpu,cpuacct/kubepods.slice/kubepods-besteffort.slice", parent, "cpu.shares")); got != "2" {
		t.Errorf("cpu.shares %q", got)
	}
	if err := m.LimitPods(Reservation{MilliCPU: 1500, Memory: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if got := sd.props["kubepods.slice"]["MemoryLimit"]; got != uint64(1<<30) {
		t.Errorf("allocatable MemoryLimit on kubepods.slice %v", got)
	}
}

func TestSystemdRefusesAnotherCgroupRootAndReportsUnitErrors(t *testing.T) {
	tree := newFakeV2(t)
	if _, err := NewQOSCgroups(Options{Root: tree.root, fs: tree, CgroupRoot: "/nodelet", systemd: newFakeSystemd(tree), systemdCtx: t.Context()}); err == nil {
		t.Error("cgroupRoot /nodelet with systemd accepted")
	}
	sd := newFakeSystemd(tree)
	sd.fail["StartTransientUnit"] = &godbus.Error{Name: "org.freedesktop.DBus.Error.AccessDenied"}
	m, err := NewQOSCgroups(Options{Root: tree.root, fs: tree, systemd: sd, systemdCtx: t.Context()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err == nil || !strings.Contains(err.Error(), "kubepods.slice") {
		t.Errorf("Start with systemd refusing units: %v", err)
	}
}
