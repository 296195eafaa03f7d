package logs

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// pickInstance chooses which instance of a container to read, as the API status would
// name it: the current instance is the newest one, the previous (last terminated) one is
// the instance before it. A current instance that was created but never started has no
// logs yet, so its predecessor's are shown, as for a container waiting in back-off.
func pickInstance(pod *v1.Pod, status *container.PodStatus, name string, previous bool) (*container.ContainerStatus, error) {
	var instances []*container.ContainerStatus
	if status != nil {
		for _, c := range status.Containers { // newest first
			if c.Name == name {
				instances = append(instances, c)
			}
		}
	}
	switch {
	case previous:
		if len(instances) < 2 {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", name, pod.Name)
		}
		return instances[1], nil
	case len(instances) == 0:
		return nil, waitingError(pod, name)
	case instances[0].State == container.StateRunning || instances[0].State == container.StateExited:
		return instances[0], nil
	case len(instances) > 1:
		return instances[1], nil
	}
	return nil, waitingError(pod, name)
}

// waitingError explains why a container has no logs yet, with the waiting reason the pod's
// status gives when it has one.
func waitingError(pod *v1.Pod, name string) error {
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if cs.Name != name || cs.State.Waiting == nil || cs.State.Waiting.Reason == "" {
				continue
			}
			switch reason := cs.State.Waiting.Reason; reason {
			case "ErrImagePull":
				return fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", name, pod.Name)
			case "ImagePullBackOff":
				return fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", name, pod.Name)
			default:
				return fmt.Errorf("container %q in pod %q is waiting to start: %s", name, pod.Name, reason)
			}
		}
	}
	return fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", name, pod.Name)
}
