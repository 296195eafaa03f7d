package runtime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podutil"
)

// ContainerKiller stops one container of a pod, as the prober needs after a liveness or
// startup probe failure. The runtime manager returned by NewManager implements it.
type ContainerKiller interface {
	// KillContainer runs the container's preStop hook and stops it within gracePeriod seconds
	// (< 0: the pod's terminationGracePeriodSeconds). message is the text of the Killing event.
	// containerID may carry the "<runtime>://" prefix of the API status. A container that is
	// gone or not running is not an error.
	KillContainer(ctx context.Context, pod *v1.Pod, containerID string, gracePeriod int64, message string) error
}

var _ ContainerKiller = (*manager)(nil)

// KillContainer implements ContainerKiller with the same stopping logic KillPod uses.
func (m *manager) KillContainer(ctx context.Context, pod *v1.Pod, containerID string, gracePeriod int64, message string) error {
	containerID = podutil.BareContainerID(containerID)
	st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	for _, c := range st.Containers {
		if c.ID != containerID {
			continue
		}
		if c.State != StateRunning && c.State != StateUnknown {
			return nil
		}
		running := &RunningPod{UID: st.UID, Name: st.Name, Namespace: st.Namespace, Sandboxes: st.Sandboxes, Containers: st.Containers}
		if err := m.killContainer(ctx, pod, running, c, gracePeriod, message, nil); err != nil {
			return fmt.Errorf("kill container of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return nil
	}
	return nil // already removed
}
