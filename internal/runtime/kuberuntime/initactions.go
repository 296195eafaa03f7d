package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// startedFunc reports whether a running container instance passed its startup probe (true
// when it has none).
type startedFunc func(c *v1.Container, st *container.ContainerStatus) bool

// initActions adds to a the init containers to start and reports whether the pod is
// initialized, so its app containers may run. Init containers run in spec order: a regular
// one is done when it exited 0, a sidecar once it runs and passed its startup probe. The
// furthest init container that has run in this sandbox marks the progress (earlier finished
// ones may have been removed since); every sidecar before it is kept running. Once an app
// container exists in the sandbox, the pod is initialized for good.
func initActions(pod *v1.Pod, status *container.PodStatus, inSandbox map[string]*container.ContainerStatus, started startedFunc, a *podActions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}
	progress := -1
	for i := range inits {
		if inSandbox[inits[i].Name] != nil {
			progress = i
		}
	}
	for _, c := range pod.Spec.Containers {
		if inSandbox[c.Name] != nil {
			progress = len(inits)
		}
	}
	for i := range inits[:max(progress, 0)] {
		if sidecar.Is(&inits[i]) {
			keepSidecar(&inits[i], status, inSandbox, started, a)
		}
	}
	if progress == len(inits) {
		return true
	}
	if progress >= 0 {
		c := &inits[progress]
		var done bool
		if sidecar.Is(c) {
			done = keepSidecar(c, status, inSandbox, started, a)
		} else {
			done = runInit(pod, c, status, inSandbox[c.Name], a)
		}
		if !done {
			return false
		}
		if progress == len(inits)-1 {
			return true
		}
	}
	next := &inits[progress+1]
	a.start = append(a.start, newStart(next, status, false))
	return false
}

// keepSidecar keeps sidecar c running: started when it has no instance in the sandbox,
// restarted (with crash-loop back-off) when it exited whatever the pod's restart policy,
// replaced when its definition changed. It reports whether c counts as started.
func keepSidecar(c *v1.Container, status *container.PodStatus, inSandbox map[string]*container.ContainerStatus, started startedFunc, a *podActions) bool {
	st := inSandbox[c.Name]
	switch {
	case st == nil:
		a.start = append(a.start, newStart(c, status, false))
		return false
	case st.State == container.StateRunning:
		if !hashMatches(st, c) {
			a.kill = append(a.kill, containerKill{st, fmt.Sprintf("Init container %s definition changed", c.Name)})
			a.start = append(a.start, newStart(c, status, false))
			return false
		}
		return c.StartupProbe == nil || started == nil || started(c, st)
	}
	if st.State == container.StateUnknown {
		a.kill = append(a.kill, containerKill{st, fmt.Sprintf("Init container is in %q state, try killing it before restart", st.State)})
	}
	a.start = append(a.start, newStart(c, status, true))
	return false
}

// runInit handles regular init container c, the furthest one that has run: done when it
// exited 0; a failed one is restarted unless the pod's policy is Never (which fails the pod).
func runInit(pod *v1.Pod, c *v1.Container, status *container.PodStatus, st *container.ContainerStatus, a *podActions) bool {
	switch {
	case st.State == container.StateRunning:
		return false
	case st.State == container.StateExited && st.ExitCode == 0:
		return true
	}
	if st.State == container.StateUnknown {
		a.kill = append(a.kill, containerKill{status: st})
	}
	if restartPolicy(pod) != v1.RestartPolicyNever {
		a.start = append(a.start, newStart(c, status, true))
	}
	return false
}

// newStart is the next instance of init container c; restart says it replaces one that ran
// in this sandbox, which crash-loop back-off gates.
func newStart(c *v1.Container, status *container.PodStatus, restart bool) containerStart {
	prev := status.FindContainer(c.Name)
	return containerStart{
		spec: c, prev: prev, restartCount: nextRestartCount(status.Containers, c.Name),
		backoff: restart || (prev != nil && prev.State != container.StateRunning),
	}
}

// startedFor adapts the prober's startup results (Options.Started) for pod; nil when there
// are none.
func (m *Manager) startedFor(pod *v1.Pod) startedFunc {
	if m.started == nil {
		return nil
	}
	return func(c *v1.Container, st *container.ContainerStatus) bool { return m.started(pod, c.Name, st.ID) }
}
