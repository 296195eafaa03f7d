package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/status"
)

func podRequesting(name, cpu, mem string) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

func TestAdmit(t *testing.T) {
	a := &Admitter{MaxPods: 3, Statuses: status.NewManager(nil), Allocatable: func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
	}}
	active := []*v1.Pod{podRequesting("a", "1500m", "256Mi")}
	cases := []struct {
		pod    *v1.Pod
		active []*v1.Pod
		reason string
		msg    string
	}{
		{podRequesting("fits", "500m", "512Mi"), active, "", ""},
		{podRequesting("cpu", "600m", ""), active, "OutOfcpu", "cpu, requested: 600, used: 1500, capacity: 2000"},
		{podRequesting("mem", "", "800Mi"), active, "OutOfmemory", "memory, requested: 838860800"},
		{podRequesting("besteffort", "", ""), active, "", ""},
		{podRequesting("count", "", ""), append(active, active[0], active[0]), "OutOfpods", "pods, requested: 1, used: 3, capacity: 3"},
	}
	for _, tc := range cases {
		ok, reason, msg := a.Admit(tc.pod, tc.active)
		if ok != (tc.reason == "") || reason != tc.reason || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: got ok=%v %q %q, want reason %q containing %q", tc.pod.Name, ok, reason, msg, tc.reason, tc.msg)
		}
	}
}

func TestRequestsCountsInitContainersAsPeak(t *testing.T) {
	p := podRequesting("p", "100m", "")
	p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
	p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("150m")}}}}
	if got := Requests(p)[v1.ResourceCPU]; got.MilliValue() != 200 {
		t.Fatalf("cpu request %dm, want 200m (two app containers beat one init)", got.MilliValue())
	}
	p.Spec.InitContainers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("1")
	if got := Requests(p)[v1.ResourceCPU]; got.MilliValue() != 1000 {
		t.Fatalf("cpu request %dm, want 1000m (the init container's peak)", got.MilliValue())
	}
}

// Sidecars run beside the init containers after them and beside the app containers.
func TestRequestsCountSidecarsBesideEverythingAfterThem(t *testing.T) {
	p := podRequesting("p", "100m", "")
	cpu := func(q string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}}
	}
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []v1.Container{
		{Name: "mesh", RestartPolicy: &always, Resources: cpu("300m")},
		{Name: "migrate", Resources: cpu("500m")},
	}
	if got := Requests(p)[v1.ResourceCPU]; got.MilliValue() != 800 {
		t.Fatalf("cpu request %dm, want 800m (migrate beside the mesh sidecar)", got.MilliValue())
	}
	p.Spec.InitContainers[1].Resources = cpu("50m")
	if got := Requests(p)[v1.ResourceCPU]; got.MilliValue() != 400 {
		t.Fatalf("cpu request %dm, want 400m (the app beside the sidecar)", got.MilliValue())
	}
}

func TestRejectSetsFailedStatus(t *testing.T) {
	st := status.NewManager(nil)
	a := &Admitter{Statuses: st}
	p := podRequesting("p", "", "")
	a.Reject(p, "OutOfpods", "full")
	got, ok := st.Get(p.UID)
	if !ok || got.Phase != v1.PodFailed || got.Reason != "OutOfpods" {
		t.Fatalf("status %+v", got)
	}
}

// Huge pages are counted against the node's allocatable of that page size; a size the node
// does not report has none, as upstream.
func TestHugePagesMustFitAllocatable(t *testing.T) {
	a := &Admitter{Statuses: status.NewManager(nil), Allocatable: func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), "hugepages-2Mi": resource.MustParse("16Mi")}
	}}
	holder := podWithExtended("holder", v1.ResourceList{"hugepages-2Mi": resource.MustParse("8Mi")})
	if ok, reason, msg := a.Admit(holder, nil); !ok {
		t.Fatalf("holder refused: %s %s", reason, msg)
	}
	cases := []struct {
		pod    *v1.Pod
		reason string
		msg    string
	}{
		{podWithExtended("fits", v1.ResourceList{"hugepages-2Mi": resource.MustParse("8Mi")}), "", ""},
		{podWithExtended("over", v1.ResourceList{"hugepages-2Mi": resource.MustParse("10Mi")}), "OutOfhugepages-2Mi",
			"Node didn't have enough resource: hugepages-2Mi, requested: 10485760, used: 8388608, capacity: 16777216"},
		{podWithExtended("no-1Gi", v1.ResourceList{"hugepages-1Gi": resource.MustParse("1Gi")}), "OutOfhugepages-1Gi",
			"Node didn't have enough resource: hugepages-1Gi, requested: 1073741824, used: 0, capacity: 0"},
	}
	for _, tc := range cases {
		ok, reason, msg := a.Admit(tc.pod, []*v1.Pod{holder})
		if ok != (tc.reason == "") || reason != tc.reason || msg != tc.msg {
			t.Errorf("%s: ok=%v %q %q, want %q %q", tc.pod.Name, ok, reason, msg, tc.reason, tc.msg)
		}
	}
}
