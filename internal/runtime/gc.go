package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nodelet/nodelet/internal/container"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

var (
	_ container.GarbageSource      = (*manager)(nil)
	_ container.ImageGarbageSource = (*manager)(nil)
)

// ImagesInUse implements ImageGarbageSource.
func (m *manager) ImagesInUse(ctx context.Context) ([]string, error) {
	containers, err := m.cri.listContainers(ctx, nil)
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
func (m *manager) RemoveContainer(ctx context.Context, id string) error {
	st, err := m.cri.containerStatus(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("container %s status: %w", id, err)
	}
	if st.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		// It could still be running: stop it without grace before removing it.
		if err := m.cri.stopContainer(ctx, id, 0); err != nil && !isNotFound(err) {
			return fmt.Errorf("stop container %s in unknown state: %w", id, err)
		}
	}
	removeLogFiles(st.LogPath)
	labels := st.GetLabels()
	m.unlinkContainerLog(labels[container.LabelPodName], labels[container.LabelPodNamespace], containerName(labels, st.Metadata), id)
	if err := m.cri.removeContainer(ctx, id); err != nil && !isNotFound(err) {
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
func (m *manager) RemoveSandbox(ctx context.Context, id string) error {
	if err := m.cri.stopPodSandbox(ctx, id); err != nil && !isNotFound(err) {
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	if err := m.cri.removePodSandbox(ctx, id); err != nil && !isNotFound(err) {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	return nil
}

// ListImages implements ImageGarbageSource.
func (m *manager) ListImages(ctx context.Context) ([]container.Image, error) {
	ctx, cancel := m.cri.short(ctx)
	defer cancel()
	resp, err := m.cri.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]container.Image, 0, len(resp.Images))
	for _, img := range resp.Images {
		out = append(out, container.Image{
			ID: img.Id, RepoTags: img.RepoTags, RepoDigests: img.RepoDigests, Size: img.Size_, Pinned: img.Pinned,
		})
	}
	return out, nil
}

// RemoveImage implements ImageGarbageSource.
func (m *manager) RemoveImage(ctx context.Context, id string) error {
	ctx, cancel := m.cri.long(ctx)
	defer cancel()
	_, err := m.cri.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("remove image %s: %w", id, err)
	}
	return nil
}

// ImageFsMountpoint implements ImageGarbageSource with the first image filesystem the runtime
// reports.
func (m *manager) ImageFsMountpoint(ctx context.Context) (string, error) {
	ctx, cancel := m.cri.short(ctx)
	defer cancel()
	resp, err := m.cri.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return "", fmt.Errorf("image fs info: %w", err)
	}
	for _, f := range resp.GetImageFilesystems() {
		if mp := f.GetFsId().GetMountpoint(); mp != "" {
			return mp, nil
		}
	}
	return "", errors.New("the runtime reports no image filesystem")
}
