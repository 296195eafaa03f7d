package cm

import (
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// pinned is the CPU manager's answer for pods whose UID starts with "x" (exclusive CPUs).
func pinned(pod *v1.Pod) bool { return pod.UID[0] == 'x' }

// DisableCPUQuotaWithExclusiveCPUs: the cgroup of a pod holding exclusive CPUs gets no CFS
// quota, in v1 (-1) and v2 ("max"); any other pod keeps its quota, and with the gate off (no
// hook) so does the pinned pod. The in-place resize reads the same quota as desired.
func TestPodWithExclusiveCPUsGetsNoQuota(t *testing.T) {
	for _, tc := range []struct {
		name      string
		exclusive func(*v1.Pod) bool
		want      string // cfs_quota_us of the pinned pod
	}{
		{"gate on", pinned, "-1"},
		{"gate off", nil, "10000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeV1(t)
			m := startManager(t, f, Options{ExclusiveCPUs: tc.exclusive})
			for uid, want := range map[string]string{"x1": tc.want, "g1": "10000"} {
				parent, err := m.EnsurePod(guaranteed(uid))
				if err != nil {
					t.Fatal(err)
				}
				if got := readValue(t, filepath.Join(f.root, "cpu,cpuacct", parent, "cpu.cfs_quota_us")); got != want {
					t.Errorf("%s: cpu.cfs_quota_us %s, want %s", uid, got, want)
				}
			}
			_, desired, err := m.PodConfig(guaranteed("x1"))
			if wantQuota := map[bool]int64{true: -1, false: 10000}[tc.exclusive != nil]; err != nil || desired.CPUQuota != wantQuota {
				t.Errorf("resize's desired quota %d (err %v), want %d", desired.CPUQuota, err, wantQuota)
			}
		})
	}
	f := newFakeV2(t)
	m := startManager(t, f, Options{ExclusiveCPUs: pinned})
	parent, err := m.EnsurePod(guaranteed("x2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readValue(t, filepath.Join(f.root, parent, "cpu.max")); got != "max 100000" {
		t.Errorf("v2 cpu.max %q, want max 100000", got)
	}
}
