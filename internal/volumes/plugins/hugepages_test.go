package plugins

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func hugePagesVolume(name string, medium v1.StorageMedium) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: medium}}}
}

func requestingHugePages(pod *v1.Pod, sizes ...string) *v1.Pod {
	req := v1.ResourceList{}
	for _, s := range sizes {
		req[v1.ResourceName(v1.ResourceHugePagesPrefix+s)] = resource.MustParse("8Mi")
	}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: req, Limits: req}
	return pod
}

// A huge pages emptyDir is a hugetlbfs of the pod's page size: the one its medium names or,
// for plain HugePages, the one its containers request; mounted once, unmounted at tear-down.
func TestHugePagesEmptyDirGetsHugetlbfs(t *testing.T) {
	e := newEnv(t)
	pod := requestingHugePages(mounting("huge", hugePagesVolume("sized", "HugePages-2Mi"), hugePagesVolume("plain", v1.StorageMediumHugePages)), "2Mi")
	for range 2 {
		for _, name := range []string{"sized", "plain"} {
			if _, err := e.setUp(pod, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := func(name string) string {
		return filepath.Join(e.root, "pods", "uid-huge", "volumes", emptyDirPlugin, name)
	}
	if want := map[string]int64{dir("sized"): 2 << 20, dir("plain"): 2 << 20}; !reflect.DeepEqual(e.mounter.PageSizes(), want) {
		t.Errorf("hugetlbfs mounts = %v, want %v", e.mounter.PageSizes(), want)
	}
	empty := &EmptyDir{mounter: e.mounter}
	if err := empty.TearDown(context.Background(), pod.UID, dir("sized")); err != nil {
		t.Fatal(err)
	}
	if _, still := e.mounter.PageSizes()[dir("sized")]; still {
		t.Error("hugetlbfs still mounted after tear-down")
	}
}

// The page size must be known, as upstream refuses.
func TestHugePageSizeErrors(t *testing.T) {
	cases := []struct {
		pod    *v1.Pod
		medium v1.StorageMedium
		want   string
	}{
		{requestingHugePages(mounting("none")), v1.StorageMediumHugePages, "there is no resource request for huge pages"},
		{requestingHugePages(mounting("other"), "1Gi"), "HugePages-2Mi", "there is no resource request for huge pages"},
		{requestingHugePages(mounting("two"), "2Mi", "1Gi"), v1.StorageMediumHugePages, "can't be used if container requests multiple huge page sizes"},
	}
	for _, tc := range cases {
		if _, err := hugePageSize(tc.pod, tc.medium); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s, medium %s: error %v, want %q", tc.pod.Name, tc.medium, err, tc.want)
		}
	}
	if size, err := hugePageSize(requestingHugePages(mounting("both"), "2Mi", "1Gi"), "HugePages-1Gi"); err != nil || size != 1<<30 {
		t.Errorf("HugePages-1Gi beside 2Mi: %d %v, want 1Gi", size, err)
	}
}
