package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// A pod with ResourceClaims is admitted with the DynamicResourceAllocation gate on (its claims
// are prepared before its sandbox); with the gate off it is refused naming the field and gate.
func TestClaimsAdmissionFollowsTheDRAGate(t *testing.T) {
	withClaims := &v1.Pod{Spec: v1.PodSpec{
		ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu")}},
		Containers:     []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}}},
	}}
	on := &Admitter{HostHasAppArmor: func() bool { return true }, DynamicResources: true}
	if ok, reason, msg := on.Admit(withClaims, nil); !ok {
		t.Fatalf("gate on: refused: %s %s", reason, msg)
	}
	off := &Admitter{HostHasAppArmor: func() bool { return true }}
	ok, reason, msg := off.Admit(withClaims, nil)
	if ok || reason != "PodFieldNotSupported" || !strings.HasPrefix(msg, "spec.containers[0].resources.claims: DRA claims are prepared only by the nodelet daemon with the DynamicResourceAllocation") {
		t.Fatalf("gate off: admitted %v, %s %q", ok, reason, msg)
	}
	containerOnly := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i"}},
		Containers: []v1.Container{{Name: "a"}, {Name: "b", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}}}}}
	if ok, _, msg := off.Admit(containerOnly, nil); ok || !strings.HasPrefix(msg, "spec.containers[1].resources.claims:") {
		t.Fatalf("gate off, container claims: admitted %v, %q", ok, msg)
	}
	podOnly := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}, ResourceClaims: withClaims.Spec.ResourceClaims}}
	if ok, _, msg := off.Admit(podOnly, nil); ok || !strings.HasPrefix(msg, "spec.resourceClaims:") {
		t.Fatalf("gate off, pod claims only: admitted %v, %q", ok, msg)
	}
}
