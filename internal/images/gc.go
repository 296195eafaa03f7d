package images

import (
	"context"
	"errors"
	"fmt"

	"github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/cri"
)

// What image garbage collection (internal/imagegc) reads and removes goes through the image
// manager, the one owner of the runtime's image service.
var _ container.ImageGarbageSource = (*Manager)(nil)

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
