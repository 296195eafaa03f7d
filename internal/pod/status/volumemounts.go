package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// volumeMountStatuses lists the container's volume mounts as upstream reports them: a
// read-only mount says whether it is recursively read-only (Enabled) or not (Disabled),
// resolved against what the pod's runtime handler supports.
func volumeMountStatuses(c v1.Container, supportsRecursiveReadOnly bool) []v1.VolumeMountStatus {
	var out []v1.VolumeMountStatus
	for _, vm := range c.VolumeMounts {
		st := v1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
		if vm.ReadOnly {
			mode := v1.RecursiveReadOnlyDisabled
			rro, err := container.RecursiveReadOnly(vm, supportsRecursiveReadOnly)
			if err != nil {
				// The container is refused with this error; the mount is not recursive.
				klog.V(4).InfoS("Volume mount's recursive read-only mode cannot be resolved", "container", c.Name, "err", err)
			} else if rro {
				mode = v1.RecursiveReadOnlyEnabled
			}
			st.RecursiveReadOnly = &mode
		}
		out = append(out, st)
	}
	return out
}
