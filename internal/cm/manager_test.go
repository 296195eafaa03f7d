package cm

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// v1Mounts are the fake v1 trees pod cgroups are made in.
var v1Mounts = []string{"cpu,cpuacct", "cpuset", "memory", "pids"}

func startManager(t *testing.T, f *fakeCgroupFS, opts Options) *QOSCgroups {
	t.Helper()
	opts.Root, opts.fs = f.root, f
	m, err := NewQOSCgroups(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	return m
}

func resources(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func newPod(uid string, containers ...v1.ResourceRequirements) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)}}
	for i, r := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "c" + string(rune('a'+i)), Resources: r})
	}
	return pod
}

func guaranteed(uid string) *v1.Pod {
	return newPod(uid, v1.ResourceRequirements{Requests: resources("100m", "100Mi"), Limits: resources("100m", "100Mi")})
}

func burstable(uid, cpu string) *v1.Pod {
	return newPod(uid, v1.ResourceRequirements{Requests: resources(cpu, "100Mi"), Limits: resources("200m", "200Mi")})
}

func bestEffort(uid string) *v1.Pod { return newPod(uid, v1.ResourceRequirements{}) }

func readValue(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestStartCreatesQoSCgroupsInEveryV1Controller(t *testing.T) {
	f := newFakeV1(t)
	m := startManager(t, f, Options{NodeMilliCPU: 2000})
	// In the name=systemd tree too, where upstream's existence check looks (directories only).
	for _, mount := range append(slices.Clone(v1Mounts), "systemd") {
		for _, p := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
			if !exists(filepath.Join(f.root, mount, p)) {
				t.Errorf("%s/%s missing", mount, p)
			}
		}
	}
	for _, mount := range []string{"unified", "not-a-mount"} {
		if exists(filepath.Join(f.root, mount, "kubepods")) {
			t.Errorf("kubepods made in %s", mount)
		}
	}
	for _, p := range []string{"kubepods", "kubepods/besteffort"} {
		if got := readValue(t, filepath.Join(f.root, "cpuset", p, "cpuset.cpus")); got != "0-3" {
			t.Errorf("%s cpuset.cpus = %q, want the parent's 0-3", p, got)
		}
		if got := readValue(t, filepath.Join(f.root, "cpuset", p, "cpuset.mems")); got != "0" {
			t.Errorf("%s cpuset.mems = %q", p, got)
		}
	}
	cpu := filepath.Join(f.root, "cpu,cpuacct")
	for p, want := range map[string]string{"kubepods": "2048", "kubepods/burstable": "2", "kubepods/besteffort": "2"} {
		if got := readValue(t, filepath.Join(cpu, p, "cpu.shares")); got != want {
			t.Errorf("%s cpu.shares = %s, want %s", p, got, want)
		}
	}
	if len(m.create) != len(v1Mounts) || len(m.all) != len(v1Mounts)+2 {
		t.Errorf("hierarchies: create %d all %d (co-mounted cpu,cpuacct must count once)", len(m.create), len(m.all))
	}
	// Start again (a restart) keeps what is there.
	if err := m.Start(); err != nil {
		t.Fatalf("second Start: %v", err)
	}
}

func TestEnsurePodPlacesPodsByQoSAndWritesLimits(t *testing.T) {
	cases := []struct {
		pod                   *v1.Pod
		parent                string
		shares, quota, memory string
	}{
		{guaranteed("g1"), "/kubepods/podg1", "102", "10000", "104857600"},
		{burstable("b1", "100m"), "/kubepods/burstable/podb1", "102", "20000", "209715200"},
		{bestEffort("e1"), "/kubepods/besteffort/pode1", "2", "-1", "-1"},
		// One container without limits leaves the pod unlimited.
		{newPod("b2", v1.ResourceRequirements{Requests: resources("500m", "")},
			v1.ResourceRequirements{Limits: resources("1", "1Gi")}), "/kubepods/burstable/podb2", "1536", "-1", "-1"},
	}
	f := newFakeV1(t)
	m := startManager(t, f, Options{PodPidsLimit: 1024})
	for _, tc := range cases {
		parent, err := m.EnsurePod(tc.pod)
		if err != nil {
			t.Fatalf("%s: %v", tc.pod.UID, err)
		}
		if parent != tc.parent {
			t.Errorf("%s: parent %q, want %q", tc.pod.UID, parent, tc.parent)
		}
		for _, mount := range v1Mounts {
			if !exists(filepath.Join(f.root, mount, tc.parent)) {
				t.Errorf("%s: no cgroup in %s", tc.pod.UID, mount)
			}
		}
		cpu := filepath.Join(f.root, "cpu,cpuacct", tc.parent)
		got := []string{
			readValue(t, filepath.Join(cpu, "cpu.shares")), readValue(t, filepath.Join(cpu, "cpu.cfs_quota_us")),
			readValue(t, filepath.Join(f.root, "memory", tc.parent, "memory.limit_in_bytes")),
		}
		if want := []string{tc.shares, tc.quota, tc.memory}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: shares/quota/memory %v, want %v", tc.pod.UID, got, want)
		}
		if got := readValue(t, filepath.Join(f.root, "pids", tc.parent, "pids.max")); got != "1024" {
			t.Errorf("%s: pids.max %s", tc.pod.UID, got)
		}
		if got := readValue(t, filepath.Join(f.root, "cpuset", tc.parent, "cpuset.cpus")); got != "0-3" {
			t.Errorf("%s: cpuset.cpus %q", tc.pod.UID, got)
		}
	}
}

func TestBurstableWeightFollowsItsPods(t *testing.T) {
	f := newFakeV1(t)
	m := startManager(t, f, Options{})
	shares := func() string {
		return readValue(t, filepath.Join(f.root, "cpu,cpuacct/kubepods/burstable/cpu.shares"))
	}
	for _, pod := range []*v1.Pod{burstable("a", "100m"), burstable("b", "300m"), guaranteed("g")} {
		if _, err := m.EnsurePod(pod); err != nil {
			t.Fatal(err)
		}
	}
	if got := shares(); got != "409" { // 102 + 307
		t.Errorf("burstable shares %s, want 409", got)
	}
	if err := m.RemovePod("a"); err != nil {
		t.Fatal(err)
	}
	if got := shares(); got != "307" {
		t.Errorf("after removing a: %s, want 307", got)
	}
	if err := m.RemovePod("b"); err != nil {
		t.Fatal(err)
	}
	if got := shares(); got != "2" {
		t.Errorf("with no burstable pods: %s, want 2", got)
	}
}

func TestRemovePodDeletesTheCgroupEverywhere(t *testing.T) {
	f := newFakeV1(t)
	m := startManager(t, f, Options{})
	parent, err := m.EnsurePod(burstable("x", "100m"))
	if err != nil {
		t.Fatal(err)
	}
	// The runtime makes the container's cgroup in every tree, the named and v2 ones too.
	for _, mount := range append([]string{"systemd", "unified"}, v1Mounts...) {
		dir := filepath.Join(f.root, mount)
		for _, p := range strings.Split(strings.Trim(parent, "/")+"/ctr1", "/") {
			dir = filepath.Join(dir, p)
			if err := f.Mkdir(dir); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
	addProcess(t, filepath.Join(f.root, "memory", parent, "ctr1"))
	err = m.RemovePod("x")
	if !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("RemovePod with a process left: %v, want EBUSY", err)
	}
	if !exists(filepath.Join(f.root, "memory", parent)) {
		t.Fatal("busy memory cgroup is gone")
	}
	clearProcesses(t, filepath.Join(f.root, "memory", parent, "ctr1"))
	if err := m.RemovePod("x"); err != nil {
		t.Fatalf("retry: %v", err)
	}
	for _, mount := range append([]string{"systemd", "unified"}, v1Mounts...) {
		if exists(filepath.Join(f.root, mount, parent)) {
			t.Errorf("pod cgroup left in %s", mount)
		}
	}
	for _, mount := range v1Mounts {
		if !exists(filepath.Join(f.root, mount, "kubepods/burstable")) {
			t.Errorf("QoS cgroup removed from %s", mount)
		}
	}
	if err := m.RemovePod("never-existed"); err != nil {
		t.Errorf("RemovePod of an unknown pod: %v", err)
	}
}

func TestCgroupRootPrefixesEveryPath(t *testing.T) {
	f := newFakeV1(t)
	m := startManager(t, f, Options{CgroupRoot: "/nodes/n1"})
	parent, err := m.EnsurePod(bestEffort("e"))
	if err != nil {
		t.Fatal(err)
	}
	if parent != "/nodes/n1/kubepods/besteffort/pode" {
		t.Errorf("parent %q", parent)
	}
	if got := readValue(t, filepath.Join(f.root, "cpuset/nodes/cpuset.cpus")); got != "0-3" {
		t.Errorf("intermediate cpuset.cpus %q", got)
	}
	if err := m.RemovePod("e"); err != nil || exists(filepath.Join(f.root, "memory", parent)) {
		t.Errorf("RemovePod: %v", err)
	}
}

func TestUnifiedV2(t *testing.T) {
	f := newFakeV2(t)
	m := startManager(t, f, Options{PodPidsLimit: 50})
	for _, dir := range []string{"", "kubepods"} {
		got := readValue(t, filepath.Join(f.root, dir, "cgroup.subtree_control"))
		for _, c := range []string{"cpu", "memory", "pids", "cpuset", "io"} {
			if !strings.Contains(got, c) {
				t.Errorf("%q subtree_control %q lacks %s", dir, got, c)
			}
		}
	}
	parent, err := m.EnsurePod(burstable("b", "100m"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.root, parent)
	for file, want := range map[string]string{"cpu.weight": "4", "cpu.max": "20000 100000", "memory.max": "209715200", "pids.max": "50"} {
		if got := readValue(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if got := readValue(t, filepath.Join(f.root, "kubepods/burstable/cpu.weight")); got != "4" {
		t.Errorf("burstable cpu.weight %q", got)
	}
	if err := m.RemovePod("b"); err != nil || exists(dir) {
		t.Errorf("RemovePod: %v", err)
	}
}

func TestNewNeedsTheControllers(t *testing.T) {
	f := newFakeV1(t)
	if err := os.RemoveAll(filepath.Join(f.root, "memory")); err != nil {
		t.Fatal(err)
	}
	_, err := NewQOSCgroups(Options{Root: f.root, fs: f})
	if err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("New without memory: %v", err)
	}
	if _, err := NewQOSCgroups(Options{Root: filepath.Join(f.root, "absent"), fs: f}); err == nil {
		t.Error("New on a missing root succeeded")
	}
}

func TestSweepOrphansWaitsForASecondLook(t *testing.T) {
	f := newFakeV1(t)
	m := startManager(t, f, Options{})
	for _, pod := range []*v1.Pod{guaranteed("known"), bestEffort("orphan"), burstable("late", "100m")} {
		if _, err := m.EnsurePod(pod); err != nil {
			t.Fatal(err)
		}
	}
	known := map[types.UID]bool{"known": true}
	keep := func(uid types.UID) bool { return known[uid] }
	if removed, err := m.SweepOrphans(keep); err != nil || len(removed) != 0 {
		t.Fatalf("first sweep removed %v, %v", removed, err)
	}
	known["late"] = true // its pod showed up after the first look
	removed, err := m.SweepOrphans(keep)
	if err != nil || len(removed) != 1 || removed[0] != "orphan" {
		t.Fatalf("second sweep removed %v, %v; want [orphan]", removed, err)
	}
	uids, err := m.PodUIDs()
	if err != nil || len(uids) != 2 || uids[0] != "known" || uids[1] != "late" {
		t.Errorf("left %v, %v", uids, err)
	}
}
