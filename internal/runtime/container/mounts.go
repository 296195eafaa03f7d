package container

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ErrRecursiveReadOnlyUnsupported is RecursiveReadOnly's error for Enabled on a runtime
// without the feature; the caller may say which runtime would have it.
var ErrRecursiveReadOnlyUnsupported = errors.New("it is not supported by the runtime")

// RecursiveReadOnly resolves a volume mount's recursiveReadOnly as upstream: Disabled or unset
// is a plain mount; Enabled and IfPossible need readOnly and no propagation; Enabled on a
// runtime without the feature is an error, IfPossible falls back to a plain read-only mount.
func RecursiveReadOnly(vm v1.VolumeMount, runtimeSupports bool) (bool, error) {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !vm.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", vm.Name)
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != v1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q",
			vm.Name, *vm.MountPropagation)
	}
	switch mode := *vm.RecursiveReadOnly; mode {
	case v1.RecursiveReadOnlyIfPossible:
		return runtimeSupports, nil
	case v1.RecursiveReadOnlyEnabled:
		if !runtimeSupports {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but %w", vm.Name, ErrRecursiveReadOnlyUnsupported)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}
