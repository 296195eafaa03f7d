package resize

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/pod/admission"
	"github.com/nodelet/nodelet/internal/pod/allocation"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// node is a 2-cpu node whose active pods the test sets.
type node struct {
	active []*v1.Pod
	woken  []types.UID
	clock  *clocktesting.FakeClock
}

func newResizer(t *testing.T, dir string, n *node) *Resizer {
	t.Helper()
	allocs, err := allocation.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}
	fit := admission.Fit{Allocatable: func() v1.ResourceList { return alloc }}
	if n.clock == nil {
		n.clock = clocktesting.NewFakeClock(time.Unix(1000, 0))
	}
	return &Resizer{
		Allocations: allocs, Fit: fit.Fits, Allocatable: fit.Allocatable,
		ActivePods: func() []*v1.Pod { return n.active },
		Wake:       func(uid types.UID) { n.woken = append(n.woken, uid) },
		Clock:      n.clock,
	}
}

func cpuPod(uid, request string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "ns", Annotations: map[string]string{"kubernetes.io/config.source": "api"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(request)},
		}}}},
	}
}

func pending(r *Resizer, pod *v1.Pod) *v1.PodCondition {
	st := v1.PodStatus{Phase: v1.PodRunning}
	r.Decorate(pod, &container.PodStatus{}, &st)
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1.PodResizePending {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestResizeDeferredUntilRoomThenAllocated(t *testing.T) {
	n := &node{clock: clocktesting.NewFakeClock(time.Unix(1000, 0))}
	r := newResizer(t, t.TempDir(), n)
	big, small := cpuPod("big", "1500m"), cpuPod("small", "200m")
	n.active = []*v1.Pod{big, small}
	for _, p := range n.active {
		if got, err := r.Handle(p); err != nil || got != p {
			t.Fatalf("first sync of %s: %v", p.Name, err)
		}
	}

	grown := cpuPod("small", "600m")
	got, err := r.Handle(grown)
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.Containers[0].Resources.Requests.Cpu(); q.String() != "200m" {
		t.Errorf("deferred pod runs with %s, want its allocated 200m", q)
	}
	c := pending(r, grown)
	wantMsg := "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000"
	if c == nil || c.Reason != v1.PodReasonDeferred || c.Message != wantMsg {
		t.Fatalf("PodResizePending = %+v, want Deferred %q", c, wantMsg)
	}
	since := c.LastTransitionTime
	n.clock.Step(time.Minute)
	if _, err := r.Handle(grown); err != nil {
		t.Fatal(err)
	}
	if c := pending(r, grown); c.LastTransitionTime != since {
		t.Errorf("a retry that still does not fit moved the transition time")
	}

	n.active = []*v1.Pod{grown} // big is gone
	r.RoomMade()
	if len(n.woken) != 1 || n.woken[0] != "small" {
		t.Fatalf("woken %v, want the deferred pod", n.woken)
	}
	if got, _ := r.Handle(grown); got != grown {
		t.Error("with room, the pod runs with its new resources")
	}
	if c := pending(r, grown); c != nil {
		t.Errorf("PodResizePending left after allocation: %+v", c)
	}
	if alloc, _ := r.Allocations.AllocatedPod(cpuPod("small", "1")); alloc.Spec.Containers[0].Resources.Requests.Cpu().String() != "600m" {
		t.Error("the allocation was not checkpointed")
	}
}

func TestResizeInfeasibleAndStatic(t *testing.T) {
	r := newResizer(t, t.TempDir(), &node{})
	pod := cpuPod("p", "100m")
	if _, err := r.Handle(pod); err != nil {
		t.Fatal(err)
	}
	huge := cpuPod("p", "3")
	r.Handle(huge)
	want := "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"
	if c := pending(r, huge); c == nil || c.Reason != v1.PodReasonInfeasible || c.Message != want {
		t.Errorf("PodResizePending = %+v, want Infeasible %q", c, want)
	}

	static := cpuPod("s", "100m")
	static.Annotations["kubernetes.io/config.source"] = "file"
	r.Handle(static)
	resized := cpuPod("s", "200m")
	resized.Annotations["kubernetes.io/config.source"] = "file"
	if got, _ := r.Handle(resized); got.Spec.Containers[0].Resources.Requests.Cpu().String() != "100m" {
		t.Error("a static pod was resized")
	}
	if c := pending(r, resized); c == nil || c.Message != "In-place resize of static-pods is not supported" {
		t.Errorf("static pod condition %+v", c)
	}
}

// A pending resize survives a restart: the checkpoint keeps the allocation, so the restarted
// resizer still runs the pod with it and decides the resize again.
func TestPendingResizeSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	n := &node{}
	r := newResizer(t, dir, n)
	other, pod := cpuPod("other", "1800m"), cpuPod("p", "100m")
	n.active = []*v1.Pod{other, pod}
	r.Handle(other)
	r.Handle(pod)
	grown := cpuPod("p", "500m")
	r.Handle(grown)

	again := newResizer(t, dir, n)
	got, err := again.Handle(grown)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Containers[0].Resources.Requests.Cpu().String() != "100m" {
		t.Error("after a restart the pending resize was applied without room")
	}
	if c := pending(again, grown); c == nil || c.Reason != v1.PodReasonDeferred {
		t.Errorf("after a restart: %+v, want Deferred", c)
	}
}

func TestDecorateResourcesAndInProgress(t *testing.T) {
	r := newResizer(t, t.TempDir(), &node{clock: clocktesting.NewFakeClock(time.Unix(1000, 0))})
	pod := cpuPod("p", "100m")
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
	r.Handle(pod)
	// The runtime runs it with a 200m limit so far; the allocation says 400m.
	r.Allocations.SetActuated(pod.UID, "c", pod.Spec.Containers[0].Resources)
	grown := pod.DeepCopy()
	grown.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("400m")
	r.Handle(grown)
	rs := &container.PodStatus{Containers: []*container.ContainerStatus{{Name: "c", ID: "id", State: container.StateRunning}}}
	st := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c"}}}
	r.Done(grown, container.SyncResult{Resized: true, ResizeErr: errors.New("boom")})
	r.Decorate(grown, rs, &st)
	cs := st.ContainerStatuses[0]
	if cs.AllocatedResources.Cpu().String() != "100m" || cs.Resources.Limits.Cpu().String() != "200m" {
		t.Errorf("allocatedResources %v resources %v, want the 100m request and the 200m in effect", cs.AllocatedResources, cs.Resources)
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Type != v1.PodResizeInProgress || st.Conditions[0].Reason != v1.PodReasonError || st.Conditions[0].Message != "boom" {
		t.Fatalf("conditions %+v, want PodResizeInProgress with the error", st.Conditions)
	}

	// The runtime reports the new limit and nodelet recorded it: done.
	r.Allocations.SetActuated(pod.UID, "c", grown.Spec.Containers[0].Resources)
	four := resource.MustParse("400m")
	rs.Containers[0].Resources = &container.ContainerResources{CPULimit: &four}
	r.Done(grown, container.SyncResult{Resized: true})
	st = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c"}}}
	r.Decorate(grown, rs, &st)
	if len(st.Conditions) != 0 || st.ContainerStatuses[0].Resources.Limits.Cpu().String() != "400m" {
		t.Errorf("after the resize: conditions %+v resources %v", st.Conditions, st.ContainerStatuses[0].Resources)
	}
}

func TestPinnedPodIsNotResized(t *testing.T) {
	r := newResizer(t, t.TempDir(), &node{})
	const msg = "Resize is infeasible for Guaranteed Pods alongside Memory Manager static policy"
	r.Pinned = func(*v1.Pod) string { return msg }
	if _, err := r.Handle(cpuPod("p", "100m")); err != nil {
		t.Fatal(err)
	}
	resized := cpuPod("p", "200m")
	if got, _ := r.Handle(resized); got.Spec.Containers[0].Resources.Requests.Cpu().String() != "100m" {
		t.Error("a pinned pod was resized")
	}
	if c := pending(r, resized); c == nil || c.Reason != v1.PodReasonInfeasible || c.Message != msg {
		t.Errorf("PodResizePending = %+v, want Infeasible %q", c, msg)
	}
}
