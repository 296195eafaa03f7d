package admission

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
)

// A container's stopSignal is admitted only with the ContainerStopSignals gate on and on a
// runtime that takes it (containerd 2.1 or later); otherwise the pod is refused naming the
// field, the gate or the runtime the node runs and the release that would lift it.
func TestStopSignalAdmission(t *testing.T) {
	runtimeAt := func(name, version string) *runtimefeatures.Store {
		s := &runtimefeatures.Store{}
		s.ObserveVersion(name, version)
		return s
	}
	withSignal := &v1.Pod{Spec: v1.PodSpec{
		Containers:     []v1.Container{{Name: "a"}},
		InitContainers: []v1.Container{{Name: "i", Lifecycle: &v1.Lifecycle{StopSignal: ptr.To(v1.SIGUSR1)}}},
	}}
	for _, tc := range []struct {
		name     string
		gate     bool
		features RuntimeFeatures
		want     string // "" admitted, else in the message
	}{
		{"containerd 2.4", true, runtimeAt("containerd", "v2.4.2"), ""},
		{"containerd 2.1", true, runtimeAt("containerd", "v2.1.0"), ""},
		{"gate off", false, runtimeAt("containerd", "v2.4.2"), "spec.initContainers[0].lifecycle.stopSignal: the ContainerStopSignals feature gate"},
		{"containerd 2.0", true, runtimeAt("containerd", "v2.0.5"), "this node runs containerd 2.0.5; containerd 2.1 or later has it"},
		{"containerd 1.6", true, runtimeAt("containerd", "1.6.20~ds1"), "this node runs containerd 1.6.20~ds1; containerd 2.1 or later has it"},
		{"another runtime", true, runtimeAt("fakecri", "1.0.0"), "this node runs fakecri 1.0.0"},
		{"runtime not asked", true, nil, "not known to take it"},
	} {
		a := &Admitter{HostHasAppArmor: func() bool { return true }, RuntimeFeatures: tc.features, StopSignals: tc.gate}
		ok, reason, msg := a.Admit(withSignal, nil)
		switch {
		case tc.want == "" && !ok:
			t.Errorf("%s: refused: %s %s", tc.name, reason, msg)
		case tc.want != "" && (ok || reason != "PodFieldNotSupported" || !strings.Contains(msg, tc.want)):
			t.Errorf("%s: %v %q %q, want a refusal saying %q", tc.name, ok, reason, msg, tc.want)
		}
		if ok, reason, msg := a.Admit(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}}, nil); !ok {
			t.Errorf("%s: a pod without stop signals refused: %s %s", tc.name, reason, msg)
		}
	}
}
