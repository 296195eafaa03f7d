package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The image service's calls. Pull back-off, credentials and the image policy are
// internal/runtime/images' work; these only bound each call.

// ImageStatus is the runtime's record of image, nil when it has none.
func (c *Client) ImageStatus(ctx context.Context, image string) (*runtimeapi.Image, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return nil, err
	}
	return resp.Image, nil
}

// PullImage pulls the image spec names with auth (nil: anonymously) for the sandbox config
// (nil: none) and returns its reference.
func (c *Client) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := c.long(ctx)
	defer cancel()
	resp, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, Auth: auth, SandboxConfig: sandbox})
	if err != nil {
		return "", err
	}
	return resp.ImageRef, nil
}

// ListImages lists every image the runtime holds.
func (c *Client) ListImages(ctx context.Context) ([]*runtimeapi.Image, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, err
	}
	return resp.Images, nil
}

// RemoveImage deletes an image by ID or reference.
func (c *Client) RemoveImage(ctx context.Context, id string) error {
	ctx, cancel := c.long(ctx)
	defer cancel()
	_, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}})
	return err
}

// ImageFsInfo reports the filesystems holding images and container writable layers.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	ctx, cancel := c.short(ctx)
	defer cancel()
	resp, err := c.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("image fs info: %w", err)
	}
	return resp, nil
}
