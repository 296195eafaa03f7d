package kuberuntime

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

var (
	_ container.Runtime    = (*Manager)(nil)
	_ container.LogService = (*Manager)(nil)
)

// ContainerLog reads the container's CRI status for its log path.
func (m *Manager) ContainerLog(ctx context.Context, containerID string) (*container.ContainerLog, error) {
	st, err := m.cri.ContainerStatus(ctx, containerID)
	if err != nil {
		if cri.IsNotFound(err) {
			return nil, fmt.Errorf("container %s: %w", containerID, container.ErrContainerNotFound)
		}
		return nil, fmt.Errorf("container %s status: %w", containerID, err)
	}
	return &container.ContainerLog{ContainerID: st.Id, Path: st.LogPath, State: stateFromCRI(st.State)}, nil
}

// RunningContainerLogs lists running containers and reads each one's status for its log
// path; containers that went away in between are skipped.
func (m *Manager) RunningContainerLogs(ctx context.Context) ([]*container.ContainerLog, error) {
	running := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	if m.nodeName != "" {
		// Only this node's containers: other nodelets may share the runtime.
		running.LabelSelector = map[string]string{container.LabelNode: m.nodeName}
	}
	containers, err := m.cri.ListContainers(ctx, running)
	if err != nil {
		return nil, fmt.Errorf("list running containers: %w", err)
	}
	out := make([]*container.ContainerLog, 0, len(containers))
	for _, c := range containers {
		cl, err := m.ContainerLog(ctx, c.Id)
		if errors.Is(err, container.ErrContainerNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, cl)
	}
	return out, nil
}

// ReopenContainerLog calls CRI ReopenContainerLog.
func (m *Manager) ReopenContainerLog(ctx context.Context, containerID string) error {
	if err := m.cri.ReopenContainerLog(ctx, containerID); err != nil {
		if cri.IsNotFound(err) {
			return fmt.Errorf("reopen log of container %s: %w", containerID, container.ErrContainerNotFound)
		}
		return fmt.Errorf("reopen log of container %s: %w", containerID, err)
	}
	return nil
}
