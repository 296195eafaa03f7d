package images

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// The keyring matches as upstream's: host labels (globs allowed) one for one, the same port,
// the key's path a prefix of the repository's; Docker Hub under any of its names; the most
// specific key first.
func TestKeyMatching(t *testing.T) {
	for _, tc := range []struct {
		key, image string
		want       bool
	}{
		{"registry.example.com", "registry.example.com/team/app:1", true},
		{"https://registry.example.com/v2/", "registry.example.com/v2/app", true},
		{"registry.example.com/team", "registry.example.com/team/app", true},
		{"registry.example.com/team", "registry.example.com/other/app", false},
		{"*.example.com", "registry.example.com/app", true},
		{"*.example.com", "a.registry.example.com/app", false},
		{"registry.example.com:5000", "registry.example.com:5000/app", true},
		{"registry.example.com:5000", "registry.example.com/app", false},
		{"registry.example.com", "registry.example.com:5000/app", false},
		{"https://index.docker.io/v1/", "busybox", true},
		{"docker.io", "library/busybox:1.36", true},
		{"index.docker.io", "docker.io/team/app", true},
		{"registry.example.com", "busybox", false},
		{"localhost:5000", "localhost:5000/app@sha256:abc", true},
	} {
		if got := keyLocation(tc.key).matches(imageLocation(tc.image)); got != tc.want {
			t.Errorf("key %q image %q: match %v, want %v", tc.key, tc.image, got, tc.want)
		}
	}
	keys := keyring{}
	keys.add(map[string]dockerAuth{
		"registry.example.com":      {Username: "broad", Password: "p"},
		"registry.example.com/team": {Username: "team", Password: "p"},
	})
	var users []string
	for _, a := range keys.lookup("registry.example.com/team/app") {
		users = append(users, a.Username)
	}
	if !slices.Equal(users, []string{"team", "broad"}) {
		t.Errorf("lookup order %v, want the more specific key first", users)
	}
}

// The pod's secrets come before the node's own docker config, which is read from the root dir.
func TestPodSecretsThenNodeConfig(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "config.json"),
		[]byte(`{"auths":{"registry.example.com":{"auth":"bm9kZTpzZWNyZXQ="}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	node := &nodeConfig{rootDir: root, now: time.Now}
	secret := v1.Secret{Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"registry.example.com":{"username":"pod","password":"p"}}`)}}
	got := credentialsFor("registry.example.com/app:1", []v1.Secret{secret}, node.keyring())
	if len(got) != 2 || got[0].Username != "pod" || got[1].Username != "node" || got[1].Password != "secret" {
		t.Fatalf("credentials %+v, want the pod's then the node's", got)
	}
}

// recordingPulls remembers the credentials of each pull and fails every one.
type recordingPulls struct {
	runtimeapi.ImageServiceClient
	auths []*runtimeapi.AuthConfig
}

func (r *recordingPulls) PullImage(_ context.Context, req *runtimeapi.PullImageRequest, _ ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	r.auths = append(r.auths, req.Auth)
	return nil, errors.New("unauthorized")
}

// Matching credentials are tried in turn and the pull gives up after them, as upstream; only
// an image with no matching credential is pulled anonymously.
func TestPullTriesCredentialsNotAnonymous(t *testing.T) {
	client := &recordingPulls{ImageServiceClient: newEnv(t).client}
	mgr, _ := NewManager(Options{CRI: cri.New(nil, client, 0)})
	secret := v1.Secret{Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(
		`{"auths":{"registry.example.com":{"username":"a","password":"p"},"registry.example.com/team":{"username":"b","password":"p"}}}`)}}
	if _, _, _, err := mgr.pull(context.Background(), &cri.ImageSpec{Image: "registry.example.com/team/app:1"}, []v1.Secret{secret}, nil); err == nil {
		t.Fatal("pull succeeded")
	}
	if len(client.auths) != 2 || client.auths[0].GetUsername() != "b" || client.auths[1].GetUsername() != "a" {
		t.Errorf("pulls with %v, want b then a and no anonymous attempt", client.auths)
	}
	client.auths = nil
	_, _, _, _ = mgr.pull(context.Background(), &cri.ImageSpec{Image: "other.example.com/app:1"}, []v1.Secret{secret}, nil)
	if len(client.auths) != 1 || client.auths[0] != nil {
		t.Errorf("unmatched image pulled with %v, want one anonymous pull", client.auths)
	}
}
