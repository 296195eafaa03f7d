package status

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// containerStatuses[].volumeMounts as upstream: every mount, read-only ones saying whether
// they are recursively read-only on this runtime; and .user as the runtime reports it.
func TestVolumeMountsAndUserInContainerStatus(t *testing.T) {
	pod := podWith(v1.RestartPolicyAlways, nil, "a")
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "rw", MountPath: "/rw"},
		{Name: "ro", MountPath: "/ro", ReadOnly: true},
		{Name: "if", MountPath: "/if", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyIfPossible)},
		{Name: "en", MountPath: "/en", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyEnabled)},
	}
	c := running("a", 0)
	c.User = &container.ContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}
	disabled, enabled := ptr.To(v1.RecursiveReadOnlyDisabled), ptr.To(v1.RecursiveReadOnlyEnabled)
	for supported, want := range map[bool][]v1.VolumeMountStatus{
		false: {{Name: "rw", MountPath: "/rw"}, {Name: "ro", MountPath: "/ro", ReadOnly: true, RecursiveReadOnly: disabled},
			{Name: "if", MountPath: "/if", ReadOnly: true, RecursiveReadOnly: disabled}, {Name: "en", MountPath: "/en", ReadOnly: true, RecursiveReadOnly: disabled}},
		true: {{Name: "rw", MountPath: "/rw"}, {Name: "ro", MountPath: "/ro", ReadOnly: true, RecursiveReadOnly: disabled},
			{Name: "if", MountPath: "/if", ReadOnly: true, RecursiveReadOnly: enabled}, {Name: "en", MountPath: "/en", ReadOnly: true, RecursiveReadOnly: enabled}},
	} {
		st := Compute(Input{Pod: pod, Runtime: rs(true, c), SupportsRecursiveReadOnly: supported})
		cs := st.ContainerStatuses[0]
		if !reflect.DeepEqual(cs.VolumeMounts, want) {
			t.Errorf("supported=%v: volumeMounts %+v, want %+v", supported, cs.VolumeMounts, want)
		}
		wantUser := &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}}
		if !reflect.DeepEqual(cs.User, wantUser) {
			t.Errorf("user %+v, want %+v", cs.User, wantUser)
		}
	}
	if st := Compute(Input{Pod: pod, Runtime: rs(true, running("a", 0))}); st.ContainerStatuses[0].User != nil {
		t.Error("user reported though the runtime reports none")
	}
}

// containerStatuses[].stopSignal, with the ContainerStopSignals gate on: the signal the
// runtime reports, else the spec's (a runtime that reports none), else nothing; with the
// gate off, nothing.
func TestStopSignalInContainerStatus(t *testing.T) {
	pod := podWith(v1.RestartPolicyAlways, nil, "a")
	reported, silent := running("a", 0), running("a", 0)
	reported.StopSignal = "SIGTERM"
	for _, tc := range []struct {
		name string
		gate bool
		spec *v1.Signal
		c    *container.ContainerStatus
		want *v1.Signal
	}{
		{"runtime's answer", true, nil, reported, ptr.To(v1.SIGTERM)},
		{"runtime's answer over the spec", true, ptr.To(v1.SIGUSR1), reported, ptr.To(v1.SIGTERM)},
		{"spec when the runtime says nothing", true, ptr.To(v1.SIGUSR1), silent, ptr.To(v1.SIGUSR1)},
		{"neither", true, nil, silent, nil},
		{"gate off", false, ptr.To(v1.SIGUSR1), reported, nil},
	} {
		pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: tc.spec}
		cs := Compute(Input{Pod: pod, Runtime: rs(true, tc.c), StopSignals: tc.gate}).ContainerStatuses[0]
		if !reflect.DeepEqual(cs.StopSignal, tc.want) {
			t.Errorf("%s: stopSignal %v, want %v", tc.name, ptr.Deref(cs.StopSignal, "<nil>"), ptr.Deref(tc.want, "<nil>"))
		}
	}
}
