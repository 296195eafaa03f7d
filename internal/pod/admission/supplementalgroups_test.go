package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
)

// supplementalGroupsPolicy Strict is refused, with upstream's reason and message, unless the
// runtime reports the feature; Merge and unset are admitted everywhere.
func TestSupplementalGroupsPolicyAdmission(t *testing.T) {
	withPolicy := func(p *v1.SupplementalGroupsPolicy) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SupplementalGroupsPolicy: p}}}
	}
	unsupported := &runtimefeatures.Store{}
	unsupported.Observe(runtimefeatures.Report{})
	unsupported.ObserveVersion("containerd", "1.6.20~ds1")
	supported := &runtimefeatures.Store{}
	supported.Observe(runtimefeatures.Report{SupplementalGroupsPolicy: true})
	strict, merge := ptr.To(v1.SupplementalGroupsPolicyStrict), ptr.To(v1.SupplementalGroupsPolicyMerge)
	for _, features := range []RuntimeFeatures{nil, unsupported} {
		a := &Admitter{HostHasAppArmor: func() bool { return true }, RuntimeFeatures: features}
		// Upstream's message, then (when nodelet knows the runtime) what would lift it.
		want := "SupplementalGroupsPolicy=Strict is not supported in this node"
		if features != nil {
			want += " (this node runs containerd 1.6.20~ds1; containerd 2.0 or later has it)"
		}
		ok, reason, msg := a.Admit(withPolicy(strict), nil)
		if ok || reason != "SupplementalGroupsPolicyNotSupported" || msg != want {
			t.Errorf("Strict without the feature: %v %q %q", ok, reason, msg)
		}
		for _, p := range []*v1.SupplementalGroupsPolicy{nil, merge} {
			if ok, reason, _ := a.Admit(withPolicy(p), nil); !ok {
				t.Errorf("policy %v refused: %s", p, reason)
			}
		}
		if ok, _, _ := a.Admit(&v1.Pod{}, nil); !ok {
			t.Error("pod without a security context refused")
		}
	}
	a := &Admitter{HostHasAppArmor: func() bool { return true }, RuntimeFeatures: supported}
	if ok, reason, _ := a.Admit(withPolicy(strict), nil); !ok {
		t.Errorf("Strict on a runtime with the feature refused: %s", reason)
	}
}
