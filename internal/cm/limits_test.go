package cm

import (
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/host/hugepages"
)

func TestPodLimitsCountInitContainersAndSidecars(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	both := func(cpu, mem string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: resources(cpu, mem), Limits: resources(cpu, mem)}
	}
	pod := newPod("p", both("200m", "100Mi"))
	pod.Spec.InitContainers = []v1.Container{
		{Name: "sidecar", RestartPolicy: &always, Resources: both("100m", "50Mi")},
		{Name: "big-init", Resources: both("1", "64Mi")},
	}
	// cpu: the init step needs 1000m + 100m of sidecar, more than 200m + 100m later on.
	// memory: 100Mi + 50Mi later on beats 64Mi + 50Mi during init.
	got := podLimits(pod, 0, true)
	want := limits{cpuShares: 1126, cpuQuota: 110000, memory: 150 << 20, pids: unlimited}
	if got.hugePages = nil; !reflect.DeepEqual(got, want) { // huge pages: TestPodLimitsHugePages
		t.Errorf("podLimits = %+v, want %+v", got, want)
	}
}

func TestPodLimitsRequestsDefaultToLimits(t *testing.T) {
	pod := newPod("p", v1.ResourceRequirements{Limits: resources("250m", "")})
	got := podLimits(pod, 7, true)
	want := limits{cpuShares: 256, cpuQuota: 25000, memory: unlimited, pids: 7}
	if got.hugePages = nil; !reflect.DeepEqual(got, want) { // huge pages: TestPodLimitsHugePages
		t.Errorf("podLimits = %+v, want %+v", got, want)
	}
}

func TestPodLimitsPodLevelResourcesWin(t *testing.T) {
	pod := newPod("p", v1.ResourceRequirements{}, v1.ResourceRequirements{})
	pod.Spec.Resources = &v1.ResourceRequirements{Requests: resources("500m", "1Gi"), Limits: resources("2", "2Gi")}
	pod.Status.QOSClass = v1.PodQOSBurstable
	got := podLimits(pod, 0, true)
	want := limits{cpuShares: 512, cpuQuota: 200000, memory: 2 << 30, pids: unlimited}
	if got.hugePages = nil; !reflect.DeepEqual(got, want) { // huge pages: TestPodLimitsHugePages
		t.Errorf("podLimits = %+v, want %+v", got, want)
	}
}

// cpuCFSQuota: false lifts the quota but keeps the weight and the memory limit.
func TestPodLimitsWithoutCPUQuota(t *testing.T) {
	pod := newPod("p", v1.ResourceRequirements{Limits: resources("250m", "64Mi")})
	got := podLimits(pod, 0, false)
	want := limits{cpuShares: 256, cpuQuota: unlimited, memory: 64 << 20, pids: unlimited}
	if got.hugePages = nil; !reflect.DeepEqual(got, want) { // huge pages: TestPodLimitsHugePages
		t.Errorf("podLimits = %+v, want %+v", got, want)
	}
}

// A RuntimeClass's overhead (spec.overhead, set by the API server) adds to the pod's cgroup.
func TestPodLimitsAddOverhead(t *testing.T) {
	pod := newPod("p", v1.ResourceRequirements{Requests: resources("100m", "32Mi"), Limits: resources("200m", "64Mi")})
	pod.Spec.Overhead = resources("10m", "1Mi")
	got := podLimits(pod, 0, true)
	want := limits{cpuShares: 112, cpuQuota: 21000, memory: 65 << 20, pids: unlimited}
	if got.hugePages = nil; !reflect.DeepEqual(got, want) { // huge pages: TestPodLimitsHugePages
		t.Errorf("podLimits = %+v, want %+v", got, want)
	}
}

func TestPodLimitsTinyQuotaHasAFloor(t *testing.T) {
	pod := newPod("p", v1.ResourceRequirements{Requests: resources("1m", ""), Limits: resources("1m", "")})
	if got := podLimits(pod, 0, true); got.cpuQuota != minQuota || got.cpuShares != minShares {
		t.Errorf("podLimits = %+v, want quota %d shares %d", got, minQuota, minShares)
	}
}

func TestSharesWeightRoundTrip(t *testing.T) {
	for _, shares := range []int64{2, 3, 102, 1024, 4096, 262144} {
		w := sharesToWeight(shares)
		if back := sharesToWeight(weightToShares(w)); back != w {
			t.Errorf("shares %d: weight %d comes back as %d", shares, w, back)
		}
	}
	if sharesToWeight(minShares) != 1 || sharesToWeight(maxShares) != 10000 {
		t.Errorf("ends: %d %d", sharesToWeight(minShares), sharesToWeight(maxShares))
	}
}

// As upstream, the pod cgroup may hold the huge pages the pod requests, and none of the other
// page sizes of the machine.
func TestPodLimitsHugePages(t *testing.T) {
	defer func(old func() []string) { hugepages.Sizes = old }(hugepages.Sizes)
	hugepages.Sizes = func() []string { return []string{"1GB", "2MB"} }
	huge := resources("100m", "64Mi")
	huge["hugepages-2Mi"] = resource.MustParse("4Mi")
	pod := newPod("p", v1.ResourceRequirements{Limits: huge}, v1.ResourceRequirements{Limits: huge})
	if got, want := podLimits(pod, 0, true).hugePages, []hugepages.Limit{{PageSize: "1GB"}, {PageSize: "2MB", Bytes: 8 << 20}}; !slices.Equal(got, want) {
		t.Errorf("huge page limits %v, want %v", got, want)
	}
	none := newPod("n", v1.ResourceRequirements{Limits: resources("100m", "64Mi")})
	if got, want := podLimits(none, 0, true).hugePages, []hugepages.Limit{{PageSize: "1GB"}, {PageSize: "2MB"}}; !slices.Equal(got, want) {
		t.Errorf("no huge pages asked: limits %v, want %v", got, want)
	}
}
