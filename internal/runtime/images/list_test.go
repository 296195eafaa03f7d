package images

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// listingImages is an image service that only answers ListImages.
type listingImages struct {
	runtimeapi.ImageServiceClient
	images []*runtimeapi.Image
	err    error
}

func (l *listingImages) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{Images: l.images}, l.err
}

func TestListSortsLargestFirstWithDigestsThenTags(t *testing.T) {
	fake := &listingImages{images: []*runtimeapi.Image{
		{Id: "sha256:a", RepoTags: []string{"small:1"}, Size_: 10},
		{Id: "sha256:b", RepoTags: []string{"big:1", "big:latest"}, RepoDigests: []string{"big@sha256:b"}, Size_: 300},
		{Id: "sha256:c", Size_: 999}, // no names: left out
		{Id: "sha256:d", RepoDigests: []string{"mid@sha256:d"}, Size_: 200},
		{Id: "sha256:e", RepoTags: []string{"also-small:1"}, Size_: 10},
	}}
	m, err := NewManager(Options{CRI: cri.New(nil, fake, 0)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.ContainerImage{
		{Names: []string{"big@sha256:b", "big:1", "big:latest"}, SizeBytes: 300},
		{Names: []string{"mid@sha256:d"}, SizeBytes: 200},
		{Names: []string{"also-small:1"}, SizeBytes: 10},
		{Names: []string{"small:1"}, SizeBytes: 10},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("List() = %+v\nwant %+v", got, want)
	}
}

func TestListReportsRuntimeError(t *testing.T) {
	m, err := NewManager(Options{CRI: cri.New(nil, &listingImages{err: errors.New("runtime down")}, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.List(context.Background()); err == nil {
		t.Fatal("List() succeeded with the runtime failing")
	}
}
