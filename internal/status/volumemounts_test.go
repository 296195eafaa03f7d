package status

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/container"
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
