package podrun

import (
	"fmt"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// ExitCode is a foreground run's exit status for a pod that ended by itself: 0 when it
// Succeeded; when it Failed, the exit code of the container that failed it — the first init
// container (not a sidecar) that exited non-zero, else the first app container in spec order
// that did — or 1 when no container did (the pod was refused or evicted) or the code is not a
// valid status.
func ExitCode(pod *v1.Pod, st v1.PodStatus) int {
	if st.Phase == v1.PodSucceeded {
		return 0
	}
	if c, code := failedContainer(pod, st); c != "" && code > 0 && code < 256 {
		return int(code)
	}
	return 1
}

// failedContainer is the container whose non-zero exit failed the pod, and its exit code.
func failedContainer(pod *v1.Pod, st v1.PodStatus) (string, int32) {
	for _, group := range []struct {
		specs    []v1.Container
		statuses []v1.ContainerStatus
	}{{pod.Spec.InitContainers, st.InitContainerStatuses}, {pod.Spec.Containers, st.ContainerStatuses}} {
		for _, spec := range group.specs {
			if sidecar.Is(&spec) {
				continue // stopped once the app was done: its exit code decides nothing
			}
			for _, cs := range group.statuses {
				if cs.Name != spec.Name {
					continue
				}
				if t := lastTermination(cs); t != nil && t.ExitCode != 0 {
					return cs.Name, t.ExitCode
				}
			}
		}
	}
	return "", 0
}

// lastTermination is how the container last ended: its current state if it is terminated,
// else its previous one.
func lastTermination(cs v1.ContainerStatus) *v1.ContainerStateTerminated {
	if cs.State.Terminated != nil {
		return cs.State.Terminated
	}
	return cs.LastTerminationState.Terminated
}

// Exit statuses after a signal stopped the pod: 128 + the signal's number, as shells report.
const (
	ExitInterrupted = 128 + int(syscall.SIGINT)  // 130
	ExitTerminated  = 128 + int(syscall.SIGTERM) // 143
)

// SignalExitCode is the exit status of a run stopped because ctx ended with cause: the
// cause os/signal.NotifyContext gives ("terminated signal received") names the signal. Any
// other cause counts as an interrupt.
func SignalExitCode(cause error) int {
	if cause == nil {
		return ExitInterrupted
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		if strings.HasPrefix(cause.Error(), sig.String()+" signal") {
			return 128 + int(sig)
		}
	}
	return ExitInterrupted
}

// describeEnd is the line printed when the pod ended by itself.
func describeEnd(pod *v1.Pod, st v1.PodStatus) string {
	line := fmt.Sprintf("pod %s/%s %s", pod.Namespace, pod.Name, st.Phase)
	if st.Phase == v1.PodSucceeded {
		return line
	}
	if c, code := failedContainer(pod, st); c != "" {
		return fmt.Sprintf("%s: container %s exited with code %d", line, c, code)
	}
	if st.Reason != "" || st.Message != "" {
		return strings.TrimSpace(fmt.Sprintf("%s: %s %s", line, st.Reason, st.Message))
	}
	return line
}
