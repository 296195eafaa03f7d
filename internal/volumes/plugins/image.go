package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/volumes"
)

// Image accepts image volumes (the ImageVolume feature gate): there is nothing to set up on
// the host, the runtime mounts the image itself from the CRI Mount's image field, which the
// runtime manager fills after pulling it. Its mount is read-only and has no host path.
type Image struct{}

func (Image) Name() string { return "kubernetes.io~image" }

func (Image) CanSetUp(s *volumes.Spec) bool { return s.Volume.Image != nil }

func (Image) SetUp(context.Context, *v1.Pod, *volumes.Spec, string) (volumes.Mount, error) {
	return volumes.Mount{ReadOnly: true}, nil
}

func (Image) TearDown(context.Context, types.UID, string) error { return nil }
