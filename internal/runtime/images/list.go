package images

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// List returns the images the runtime holds as the node status reports them: each image's names
// (digests first, then tags, as the kubelet lists them) and size, largest image first. Images
// without any name are left out: nothing could refer to them. Callers cap the list
// (nodeStatusMaxImages) themselves.
func (m *Manager) List(ctx context.Context) ([]v1.ContainerImage, error) {
	images, err := m.cri.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	out := make([]v1.ContainerImage, 0, len(images))
	for _, img := range images {
		names := append(append([]string{}, img.GetRepoDigests()...), img.GetRepoTags()...)
		if len(names) == 0 {
			continue
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize_())})
	}
	// Largest first; ties by first name so the status does not churn between calls.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].SizeBytes != out[j].SizeBytes {
			return out[i].SizeBytes > out[j].SizeBytes
		}
		return out[i].Names[0] < out[j].Names[0]
	})
	return out, nil
}
