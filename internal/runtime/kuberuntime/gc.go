package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

var _ container.GarbageSource = (*Manager)(nil)

// RemoveContainer implements GarbageSource.
func (m *Manager) RemoveContainer(ctx context.Context, id string) error {
	st, err := m.cri.ContainerStatus(ctx, id)
	if cri.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("container %s status: %w", id, err)
	}
	if st.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		// It could still be running: stop it without grace before removing it.
		if err := m.cri.StopContainer(ctx, id, 0); err != nil && !cri.IsNotFound(err) {
			return fmt.Errorf("stop container %s in unknown state: %w", id, err)
		}
	}
	removeLogFiles(st.LogPath)
	labels := st.GetLabels()
	m.logLinks.Unlink(labels[container.LabelPodName], labels[container.LabelPodNamespace], containerName(labels, st.Metadata), id)
	if err := m.cri.RemoveContainer(ctx, id); err != nil && !cri.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// removeLogFiles deletes a container's log file and its rotated copies (path.<time>[.gz]).
func removeLogFiles(path string) {
	if path == "" {
		return
	}
	rotated, _ := filepath.Glob(path + ".*")
	for _, p := range append(rotated, path) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			klog.InfoS("Cannot remove a container log file", "path", p, "err", err)
		}
	}
}

// RemoveSandbox implements GarbageSource.
func (m *Manager) RemoveSandbox(ctx context.Context, id string) error {
	if err := m.cri.StopPodSandbox(ctx, id); err != nil && !cri.IsNotFound(err) {
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	if err := m.cri.RemovePodSandbox(ctx, id); err != nil && !cri.IsNotFound(err) {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	return nil
}
