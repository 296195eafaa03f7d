package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/cri"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

var (
	_ container.GarbageSource      = (*Manager)(nil)
	_ container.ImageGarbageSource = (*Manager)(nil)
)

// ImagesInUse implements ImageGarbageSource.
func (m *Manager) ImagesInUse(ctx context.Context) ([]string, error) {
	containers, err := m.cri.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var refs []string
	for _, c := range containers {
		if c.ImageRef != "" {
			refs = append(refs, c.ImageRef)
		}
		if c.Image != nil && c.Image.Image != "" {
			refs = append(refs, c.Image.Image)
		}
	}
	return refs, nil
}

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
	m.unlinkContainerLog(labels[container.LabelPodName], labels[container.LabelPodNamespace], containerName(labels, st.Metadata), id)
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

// ListImages implements ImageGarbageSource.
func (m *Manager) ListImages(ctx context.Context) ([]container.Image, error) {
	images, err := m.cri.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]container.Image, 0, len(images))
	for _, img := range images {
		out = append(out, container.Image{
			ID: img.Id, RepoTags: img.RepoTags, RepoDigests: img.RepoDigests, Size: img.Size_, Pinned: img.Pinned,
		})
	}
	return out, nil
}

// RemoveImage implements ImageGarbageSource.
func (m *Manager) RemoveImage(ctx context.Context, id string) error {
	err := m.cri.RemoveImage(ctx, id)
	if err != nil && !cri.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", id, err)
	}
	return nil
}

// ImageFsMountpoint implements ImageGarbageSource with the first image filesystem the runtime
// reports.
func (m *Manager) ImageFsMountpoint(ctx context.Context) (string, error) {
	resp, err := m.cri.ImageFsInfo(ctx)
	if err != nil {
		return "", err
	}
	for _, f := range resp.GetImageFilesystems() {
		if mp := f.GetFsId().GetMountpoint(); mp != "" {
			return mp, nil
		}
	}
	return "", errors.New("the runtime reports no image filesystem")
}
