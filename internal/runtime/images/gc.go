package images

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// What image garbage collection (internal/node/imagegc) reads and removes goes through the image
// manager, the one owner of the runtime's image service.
var _ container.ImageGarbageSource = (*Manager)(nil)

// ImagesInUse implements ImageGarbageSource: the images of every container, and those the
// image volumes of the node's pods mount.
func (m *Manager) ImagesInUse(ctx context.Context) ([]string, error) {
	refs, err := m.volumeImagesInUse(ctx)
	if err != nil {
		return nil, err
	}
	containers, err := m.cri.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
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

// volumeImagesInUse resolves the image volumes' references to image IDs through the runtime
// (which knows what a short name like "busybox" means), so that an image is kept whatever
// name the pod gave it; the references go too, for an image not present at all.
func (m *Manager) volumeImagesInUse(ctx context.Context) ([]string, error) {
	if m.volImages == nil {
		return nil, nil
	}
	var refs []string
	for _, image := range sets.List(sets.New(m.volImages()...)) {
		id, err := m.imageID(ctx, image)
		if err != nil {
			return nil, fmt.Errorf("image volume image %s: %w", image, err)
		}
		refs = append(refs, image)
		if id != "" {
			refs = append(refs, id)
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
