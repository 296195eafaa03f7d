package cm

import (
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/host/hugepages"
)

const unlimitedHugetlb = "9223372036854771712"

func hugePagesPod(uid string) *v1.Pod {
	rl := resources("100m", "64Mi")
	rl["hugepages-2Mi"] = resource.MustParse("8Mi")
	return newPod(uid, v1.ResourceRequirements{Requests: rl, Limits: rl})
}

// On a host with the hugetlb hierarchy the pod cgroup may hold the huge pages the pod requests
// and none of the other sizes; without it the pod cgroup is made all the same.
func TestPodCgroupHugetlbLimitsV1(t *testing.T) {
	defer func(old func() []string) { hugepages.Sizes = old }(hugepages.Sizes)
	hugepages.Sizes = func() []string { return []string{"1GB", "2MB"} }
	f := newFakeV1(t)
	files := map[string]string{"hugetlb.2MB.limit_in_bytes": unlimitedHugetlb, "hugetlb.1GB.limit_in_bytes": unlimitedHugetlb}
	f.v1Files["hugetlb"] = files
	f.writeAll(t, filepath.Join(f.root, "hugetlb"), files)
	m := startManager(t, f, Options{})
	for pod, want := range map[*v1.Pod][2]string{hugePagesPod("h"): {"8388608", "0"}, guaranteed("g"): {"0", "0"}} {
		parent, err := m.EnsurePod(pod)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(f.root, "hugetlb", parent)
		got := [2]string{readValue(t, filepath.Join(dir, "hugetlb.2MB.limit_in_bytes")), readValue(t, filepath.Join(dir, "hugetlb.1GB.limit_in_bytes"))}
		if got != want {
			t.Errorf("pod %s: hugetlb 2MB/1GB limits %v, want %v", pod.UID, got, want)
		}
	}

	if _, err := startManager(t, newFakeV1(t), Options{}).EnsurePod(hugePagesPod("h")); err != nil {
		t.Errorf("without a hugetlb hierarchy: %v", err)
	}
}

func TestPodCgroupHugetlbLimitsV2(t *testing.T) {
	defer func(old func() []string) { hugepages.Sizes = old }(hugepages.Sizes)
	hugepages.Sizes = func() []string { return []string{"2MB"} }
	f := newFakeV2(t)
	f.writeAll(t, f.root, map[string]string{"cgroup.controllers": "cpuset cpu io memory pids hugetlb\n", "cgroup.subtree_control": ""})
	v2Files["hugetlb"] = map[string]string{"hugetlb.2MB.max": "max"}
	defer delete(v2Files, "hugetlb")
	m := startManager(t, f, Options{})
	parent, err := m.EnsurePod(hugePagesPod("h"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readValue(t, filepath.Join(f.root, parent, "hugetlb.2MB.max")); got != "8388608" {
		t.Errorf("hugetlb.2MB.max = %q, want 8388608", got)
	}
}
