package fakecri

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ImageID is the ID the fake gives an image name.
func ImageID(name string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(name)))
}

// AddImage puts images in the store, as if already pulled.
func (f *Fake) AddImage(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		f.addImageLocked(n)
	}
}

// Images returns the names of the images in the store, sorted.
func (f *Fake) Images() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, img := range f.images {
		names = append(names, img.RepoTags...)
	}
	sort.Strings(names)
	return names
}

// SetImageUser sets the user image runs as (a numeric uid, or a name when uid is nil).
func (f *Fake) SetImageUser(image string, uid *int64, username string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	img := f.addImageLocked(image)
	img.Uid, img.Username = nil, username
	if uid != nil {
		img.Uid = &runtimeapi.Int64Value{Value: *uid}
	}
}

// SetPullError makes pulls of image fail with err until cleared with a nil err.
func (f *Fake) SetPullError(image string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.pullErrors, image)
		return
	}
	f.pullErrors[image] = err
}

func (f *Fake) addImageLocked(name string) *runtimeapi.Image {
	id := ImageID(name)
	if img, ok := f.images[id]; ok {
		return img
	}
	img := &runtimeapi.Image{Id: id, RepoTags: []string{name}, Size_: 1 << 20}
	f.images[id] = img
	return img
}

// findImageLocked looks an image up by ID or tag.
func (f *Fake) findImageLocked(ref string) *runtimeapi.Image {
	if img, ok := f.images[ref]; ok {
		return img
	}
	return f.images[ImageID(ref)]
}

// ListImages lists every image.
func (f *Fake) ListImages(context.Context, *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &runtimeapi.ListImagesResponse{}
	for _, img := range f.images {
		resp.Images = append(resp.Images, img)
	}
	return resp, nil
}

// ImageStatus reports an image, or a nil image when it is not present (as the CRI says).
func (f *Fake) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ImageStatusResponse{Image: f.findImageLocked(req.GetImage().GetImage())}, nil
}

// PullImage adds the image unless a pull error is set for it.
func (f *Fake) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	name := req.GetImage().GetImage()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pulls = append(f.pulls, req)
	if err := f.pullErrors[name]; err != nil {
		return nil, err
	}
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "image name is empty")
	}
	return &runtimeapi.PullImageResponse{ImageRef: f.addImageLocked(name).Id}, nil
}

// Pulls returns every PullImage request received, in order.
func (f *Fake) Pulls() []*runtimeapi.PullImageRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*runtimeapi.PullImageRequest(nil), f.pulls...)
}

// RemoveImage deletes an image; a missing one is not an error.
func (f *Fake) RemoveImage(_ context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if img := f.findImageLocked(req.GetImage().GetImage()); img != nil {
		delete(f.images, img.Id)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports no filesystems.
func (f *Fake) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}
