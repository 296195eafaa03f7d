package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// containerStart is one container instance SyncPod should create and start.
type containerStart struct {
	spec *v1.Container
	// prev is the newest earlier instance of this container (any sandbox), nil when none.
	prev *container.ContainerStatus
	// restartCount of the new instance: one more than any earlier instance.
	restartCount int
	// backoff is set when this restarts a finished container, which crash-loop back-off gates.
	backoff bool
}

// containerKill is one container SyncPod should stop first.
type containerKill struct {
	status  *container.ContainerStatus
	message string
}

// podActions is what SyncPod decided to do, computed from the spec and the runtime state
// before anything is changed.
type podActions struct {
	// createSandbox: no usable sandbox; kill what is left of the pod and run a new one.
	createSandbox bool
	attempt       uint32
	// sandbox is the current ready sandbox when no new one is created.
	sandbox *container.SandboxStatus
	kill    []containerKill
	// start holds the init containers to start (sidecars, and at most one regular init
	// container) and then the app containers, in spec order.
	start []containerStart
	// killPod: every app container is done for good; stop what still runs (the sidecars, in
	// termination order) and the sandbox, so the pod can complete.
	killPod bool
}

func restartPolicy(pod *v1.Pod) v1.RestartPolicy {
	if pod.Spec.RestartPolicy == "" {
		return v1.RestartPolicyAlways
	}
	return pod.Spec.RestartPolicy
}

// shouldRestart says whether a finished container instance is started again.
func shouldRestart(policy v1.RestartPolicy, st *container.ContainerStatus) bool {
	switch policy {
	case v1.RestartPolicyAlways:
		return true
	case v1.RestartPolicyOnFailure:
		return st.State != container.StateExited || st.ExitCode != 0
	}
	return false
}

// newestByName maps container name to its newest instance among statuses (sorted newest first)
// accepted by keep.
func newestByName(statuses []*container.ContainerStatus, keep func(*container.ContainerStatus) bool) map[string]*container.ContainerStatus {
	out := map[string]*container.ContainerStatus{}
	for _, st := range statuses {
		if _, seen := out[st.Name]; !seen && keep(st) {
			out[st.Name] = st
		}
	}
	return out
}

func nextRestartCount(statuses []*container.ContainerStatus, name string) int {
	n := 0
	for _, st := range statuses {
		if st.Name == name && st.RestartCount+1 > n {
			n = st.RestartCount + 1
		}
	}
	return n
}

// podFinished reports whether the pod's containers are done as its restart policy says, so a
// dead sandbox is not replaced: under Never once anything ran, under OnFailure once every app
// container succeeded.
func podFinished(pod *v1.Pod, status *container.PodStatus, newest map[string]*container.ContainerStatus) bool {
	switch restartPolicy(pod) {
	case v1.RestartPolicyNever:
		return len(status.Containers) > 0
	case v1.RestartPolicyOnFailure:
		for _, c := range pod.Spec.Containers {
			st := newest[c.Name]
			if st == nil || st.State != container.StateExited || st.ExitCode != 0 {
				return false
			}
		}
		return len(pod.Spec.Containers) > 0
	}
	return false
}

// computeActions decides the sandbox, then the init containers (the next one to run, and the
// sidecars to keep running), then the app containers. started reports whether a running
// sidecar instance passed its startup probe.
func computeActions(pod *v1.Pod, status *container.PodStatus, started startedFunc) podActions {
	var a podActions
	anySandbox := func(*container.ContainerStatus) bool { return true }
	newest := newestByName(status.Containers, anySandbox)

	var current *container.SandboxStatus
	if len(status.Sandboxes) > 0 {
		current = status.Sandboxes[0]
	}
	usable := current != nil && current.Ready && (pod.Spec.HostNetwork || current.HostNet || len(current.IPs) > 0)
	inSandbox := map[string]*container.ContainerStatus{}
	if usable {
		a.sandbox = current
		inSandbox = newestByName(status.Containers, func(st *container.ContainerStatus) bool { return st.SandboxID == current.ID })
	} else {
		if podFinished(pod, status, newest) {
			return a
		}
		a.createSandbox = true
		for _, sb := range status.Sandboxes {
			a.attempt = max(a.attempt, sb.Attempt+1)
		}
	}

	if !initActions(pod, status, inSandbox, started, &a) {
		return a
	}
	policy := restartPolicy(pod)
	apps, keep := len(a.start), 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st := inSandbox[c.Name]
		prev := newest[c.Name]
		next := containerStart{spec: c, prev: prev, restartCount: nextRestartCount(status.Containers, c.Name)}
		switch {
		case st == nil:
			// A new sandbox restarts only what the policy restarts; a running leftover is
			// killed with the old sandbox.
			if prev != nil && prev.State != container.StateRunning && !shouldRestart(policy, prev) {
				continue
			}
			next.backoff = prev != nil && prev.State != container.StateRunning
			a.start = append(a.start, next)
		case st.State == container.StateRunning:
			if !hashMatches(st, c) {
				a.kill = append(a.kill, containerKill{st, fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)})
				a.start = append(a.start, next)
				continue
			}
			keep++
		default: // exited, created (start failed), unknown
			if st.State == container.StateUnknown {
				a.kill = append(a.kill, containerKill{status: st})
			}
			if shouldRestart(policy, st) {
				next.backoff = true
				a.start = append(a.start, next)
			}
		}
	}
	if keep == 0 && len(a.start) == apps {
		// As upstream: nothing of the app runs or will run again, so the sidecars must not
		// keep the pod alive.
		a.killPod, a.start, a.kill = true, nil, nil
	}
	return a
}
