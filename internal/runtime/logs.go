package runtime

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrContainerNotFound is returned (wrapped) when the runtime no longer knows a container.
var ErrContainerNotFound = errors.New("container not found")

// ContainerLog is a container's log file as the runtime reports it.
type ContainerLog struct {
	ContainerID string
	// Path is the CRI status.logPath (the sandbox log directory joined with the container's
	// log path); empty when the container logs nowhere.
	Path  string
	State ContainerState
}

// LogService is the CRI side of container logs: the log file of one container (for
// /containerLogs), the running containers' log files and reopening a log after it was
// rotated (for log rotation). The Manager NewManager returns implements it.
type LogService interface {
	// ContainerLog returns the container's log path and state; ErrContainerNotFound (wrapped)
	// when the runtime no longer has it.
	ContainerLog(ctx context.Context, containerID string) (*ContainerLog, error)
	// RunningContainerLogs lists every running container with its log path.
	RunningContainerLogs(ctx context.Context) ([]*ContainerLog, error)
	// ReopenContainerLog asks the runtime to reopen the container's log file, so it writes a
	// fresh file at the log path after the old one was renamed.
	ReopenContainerLog(ctx context.Context, containerID string) error
}

var _ LogService = (*manager)(nil)

// ContainerLog reads the container's CRI status for its log path.
func (m *manager) ContainerLog(ctx context.Context, containerID string) (*ContainerLog, error) {
	st, err := m.cri.containerStatus(ctx, containerID)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("container %s: %w", containerID, ErrContainerNotFound)
		}
		return nil, fmt.Errorf("container %s status: %w", containerID, err)
	}
	return &ContainerLog{ContainerID: st.Id, Path: st.LogPath, State: stateFromCRI(st.State)}, nil
}

// RunningContainerLogs lists running containers and reads each one's status for its log
// path; containers that went away in between are skipped.
func (m *manager) RunningContainerLogs(ctx context.Context) ([]*ContainerLog, error) {
	running := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	if m.nodeName != "" {
		// Only this node's containers: other nodelets may share the runtime.
		running.LabelSelector = map[string]string{LabelNode: m.nodeName}
	}
	containers, err := m.cri.listContainers(ctx, running)
	if err != nil {
		return nil, fmt.Errorf("list running containers: %w", err)
	}
	out := make([]*ContainerLog, 0, len(containers))
	for _, c := range containers {
		cl, err := m.ContainerLog(ctx, c.Id)
		if errors.Is(err, ErrContainerNotFound) {
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
func (m *manager) ReopenContainerLog(ctx context.Context, containerID string) error {
	if err := m.cri.reopenContainerLog(ctx, containerID); err != nil {
		if isNotFound(err) {
			return fmt.Errorf("reopen log of container %s: %w", containerID, ErrContainerNotFound)
		}
		return fmt.Errorf("reopen log of container %s: %w", containerID, err)
	}
	return nil
}

func (c *criClient) reopenContainerLog(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return err
}
