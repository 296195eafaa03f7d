// Package podhooks is how the resource managers add to the CRI configs the runtime manager
// sends: the runtime builds a sandbox's or container's config from the pod spec, then hands it
// to each hook in turn, in one place, in the order the hooks were given. A hook owns the
// fields it sets (the pod cgroup parent, a container's cpuset, its devices) and leaves the
// rest alone, so the runtime knows nothing of the managers and a manager nothing of how the
// rest of the config is made.
//
// The order is fixed by whoever builds the Hooks (internal/app) and documented there; the
// runtime applies sandbox hooks before RunPodSandbox, and container hooks after the
// container's own config and before it joins its sandbox's user namespace (so mounts a hook
// adds get the pod's ID mapping too).
package podhooks

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Prepare readies what a pod needs from outside the node before its sandbox is made (the
// DRA drivers prepare its ResourceClaims). An error keeps the pod waiting: the sync posts a
// warning event with PrepareFailure's reason ("Failed to <action>: <error>") and is retried.
type Prepare interface {
	PreparePod(ctx context.Context, pod *v1.Pod) error
	PrepareFailure() (reason, action string)
}

// PrepareError is a Prepare hook's failure with the event it is posted with.
type PrepareError struct {
	Reason, Action string
	Err            error
}

func (e *PrepareError) Error() string { return "failed to " + e.Action + ": " + e.Err.Error() }
func (e *PrepareError) Unwrap() error { return e.Err }

// Sandbox adds to the config of pod's sandbox before it is run. An error fails the
// sandbox's creation (and the sync, which is retried).
type Sandbox interface {
	ApplySandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error
}

// Container adds to the config of one container instance before it is created. An error
// fails the container's creation (CreateContainerConfigError), which is retried.
type Container interface {
	ApplyContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error
}

// Resources adjusts the cgroup settings the runtime derives from a container's requests and
// limits, wherever it derives them: at creation and on an in-place resize. It cannot fail: it
// only rewrites what is already decided.
type Resources interface {
	ApplyResources(pod *v1.Pod, c *v1.Container, res *runtimeapi.LinuxContainerResources)
}

// Hooks are the hooks of each kind, each list applied in its order. The zero value applies
// none.
type Hooks struct {
	Prepare   []Prepare
	Sandbox   []Sandbox
	Container []Container
	Resources []Resources
}

// PreparePod runs the prepare hooks in order, stopping at the first error (a *PrepareError).
func (h Hooks) PreparePod(ctx context.Context, pod *v1.Pod) error {
	for _, p := range h.Prepare {
		if err := p.PreparePod(ctx, pod); err != nil {
			reason, action := p.PrepareFailure()
			return &PrepareError{Reason: reason, Action: action, Err: err}
		}
	}
	return nil
}

// ApplySandbox runs the sandbox hooks in order, stopping at the first error.
func (h Hooks) ApplySandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
	for _, s := range h.Sandbox {
		if err := s.ApplySandbox(ctx, pod, cfg); err != nil {
			return err
		}
	}
	return nil
}

// ApplyContainer runs the container hooks in order, stopping at the first error.
func (h Hooks) ApplyContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	for _, k := range h.Container {
		if err := k.ApplyContainer(ctx, pod, c, cfg); err != nil {
			return err
		}
	}
	return nil
}

// ApplyResources runs the resources hooks in order.
func (h Hooks) ApplyResources(pod *v1.Pod, c *v1.Container, res *runtimeapi.LinuxContainerResources) {
	for _, r := range h.Resources {
		r.ApplyResources(pod, c, res)
	}
}

// LinuxResources returns cfg's Linux resources for a hook to set, making them when unset.
func LinuxResources(cfg *runtimeapi.ContainerConfig) *runtimeapi.LinuxContainerResources {
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	if cfg.Linux.Resources == nil {
		cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{}
	}
	return cfg.Linux.Resources
}
