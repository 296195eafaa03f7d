package resize

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// sidecarPod is cpuPod("p", "100m") with a sidecar requesting proxyCPU started before a
// regular init container requesting 800m.
func sidecarPod(proxyCPU string) *v1.Pod {
	pod := cpuPod("p", "100m")
	cpu := func(q string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}}
	}
	pod.Spec.InitContainers = []v1.Container{
		{Name: "proxy", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways), Resources: cpu(proxyCPU)},
		{Name: "setup", Resources: cpu("800m")},
	}
	return pod
}

// A sidecar's resize is decided with upstream's sidecar rule (sidecar.Fold): the pod needs
// the most of its app containers plus sidecars and of each init container plus the sidecars
// before it, not the sum of all its containers nor only its app containers.
func TestSidecarResizeFitsByTheSidecarRule(t *testing.T) {
	n := &node{}
	r := newResizer(t, t.TempDir(), n)
	other, pod := cpuPod("other", "1"), sidecarPod("100m")
	n.active = []*v1.Pod{other, pod}
	r.Handle(other)
	r.Handle(pod)

	// 150m: the pod needs max(100m+150m, 800m+150m) = 950m beside 1 cpu: fits 2 cpus (the sum
	// of all its containers, 1050m, would not).
	fits := sidecarPod("150m")
	if got, _ := r.Handle(fits); got != fits {
		t.Fatalf("sidecar resize to 150m refused: %+v", pending(r, fits))
	}
	// 300m: max(400m, 1100m) beside 1 cpu does not fit (the app containers alone would).
	n.active = []*v1.Pod{other, fits}
	big := sidecarPod("300m")
	got, _ := r.Handle(big)
	if q := got.Spec.InitContainers[0].Resources.Requests.Cpu().String(); q != "150m" {
		t.Errorf("a sidecar resize that does not fit runs with %s, want the allocated 150m", q)
	}
	want := "Node didn't have enough resource: cpu, requested: 1100, used: 1000, capacity: 2000"
	if c := pending(r, big); c == nil || c.Reason != v1.PodReasonDeferred || c.Message != want {
		t.Errorf("PodResizePending = %+v, want Deferred %q", c, want)
	}
}

// A running sidecar's initContainerStatuses entry shows its allocation and what is in
// effect, and its resize in progress shows as PodResizeInProgress.
func TestDecorateSidecarResources(t *testing.T) {
	r := newResizer(t, t.TempDir(), &node{})
	pod := sidecarPod("100m")
	r.Handle(pod)
	r.Allocations.SetActuated(pod.UID, "proxy", pod.Spec.InitContainers[0].Resources)
	r.Allocations.SetActuated(pod.UID, "c", pod.Spec.Containers[0].Resources)
	grown := sidecarPod("200m")
	r.Handle(grown)
	rs := &container.PodStatus{Containers: []*container.ContainerStatus{
		{Name: "proxy", ID: "p1", State: container.StateRunning},
		{Name: "setup", ID: "s1", State: container.StateExited},
		{Name: "c", ID: "c1", State: container.StateRunning},
	}}
	st := v1.PodStatus{Phase: v1.PodRunning,
		InitContainerStatuses: []v1.ContainerStatus{{Name: "proxy"}, {Name: "setup"}},
		ContainerStatuses:     []v1.ContainerStatus{{Name: "c"}}}
	r.Decorate(grown, rs, &st)
	proxy := st.InitContainerStatuses[0]
	if proxy.AllocatedResources.Cpu().String() != "200m" || proxy.Resources == nil || proxy.Resources.Requests.Cpu().String() != "100m" {
		t.Errorf("sidecar status: allocated %v resources %v, want 200m allocated and 100m in effect", proxy.AllocatedResources, proxy.Resources)
	}
	if setup := st.InitContainerStatuses[1]; setup.AllocatedResources.Cpu().String() != "800m" {
		t.Errorf("init container status: allocated %v, want its 800m", setup.AllocatedResources)
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Type != v1.PodResizeInProgress {
		t.Errorf("conditions %+v, want PodResizeInProgress for the sidecar", st.Conditions)
	}
}
