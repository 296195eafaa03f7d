package kuberuntime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

var _ container.ContainerKiller = (*Manager)(nil)

// KillContainer implements ContainerKiller with the same stopping logic KillPod uses.
func (m *Manager) KillContainer(ctx context.Context, pod *v1.Pod, containerID string, gracePeriod int64, message string) error {
	containerID = podutil.BareContainerID(containerID)
	st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	for _, c := range st.Containers {
		if c.ID != containerID {
			continue
		}
		if c.State != container.StateRunning && c.State != container.StateUnknown {
			return nil
		}
		running := &container.RunningPod{UID: st.UID, Name: st.Name, Namespace: st.Namespace, Sandboxes: st.Sandboxes, Containers: st.Containers}
		if err := m.killContainer(ctx, pod, running, c, gracePeriod, message, nil); err != nil {
			return fmt.Errorf("kill container of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return nil
	}
	return nil // already removed
}
