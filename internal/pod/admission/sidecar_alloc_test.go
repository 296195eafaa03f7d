package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/pod/status"
)

// A new pod is admitted beside the active pods' allocated resources, counted with the
// sidecar rule: an active pod whose sidecar resize to 1500m is still pending counts with its
// allocated 200m sidecar beside its 100m app container.
func TestAdmitCountsActiveSidecarsAsAllocated(t *testing.T) {
	withSidecar := func(cpu string) *v1.Pod {
		p := podRequesting("mesh", "100m", "")
		p.UID = types.UID("uid-mesh")
		p.Spec.InitContainers = []v1.Container{{Name: "proxy", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}
		return p
	}
	allocated := withSidecar("200m")
	a := &Admitter{Statuses: status.NewManager(nil),
		Allocatable: func() v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")} },
		Allocated: func(p *v1.Pod) *v1.Pod {
			if p.UID == allocated.UID {
				return allocated
			}
			return p
		}}
	active := []*v1.Pod{withSidecar("1500m")}
	if ok, reason, msg := a.Admit(podRequesting("fits", "1700m", ""), active); !ok {
		t.Errorf("1700m beside 300m allocated refused: %s %s", reason, msg)
	}
	ok, reason, msg := a.Admit(podRequesting("over", "1701m", ""), active)
	if want := "Node didn't have enough resource: cpu, requested: 1701, used: 300, capacity: 2000"; ok || reason != "OutOfcpu" || msg != want {
		t.Errorf("got %v %q %q, want OutOfcpu %q (app + sidecar as allocated)", ok, reason, msg, want)
	}
	// After a nodelet restart the pod itself is admitted again with what it was allocated,
	// not refused for the resize still pending in its spec.
	if ok, reason, msg := a.Admit(withSidecar("1500m"), []*v1.Pod{podRequesting("big", "1600m", "")}); !ok {
		t.Errorf("re-admission of the pod with a pending resize refused: %s %s", reason, msg)
	}
}
