package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// store writes blobs into a fake content store and returns their digests.
func store(t *testing.T, dir string, blobs ...string) []string {
	t.Helper()
	var digests []string
	for _, b := range blobs {
		hex := fmt.Sprintf("%x", sha256.Sum256([]byte(b)))
		if err := os.WriteFile(filepath.Join(dir, hex), []byte(b), 0o444); err != nil {
			t.Fatal(err)
		}
		digests = append(digests, "sha256:"+hex)
	}
	return digests
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func TestServesManifestsAndBlobsEvenAfterTheRuntimeDeletesThem(t *testing.T) {
	content, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json"}`
	digests := store(t, content, manifest, "layer bytes")
	s := &server{contentDir: content, dataDir: data, defaultHost: "registry.k8s.io"}
	s.list = func() (map[string]image, error) {
		return map[string]image{"registry.k8s.io/e2e-test-images/agnhost:2.53": {
			mediaType: "application/vnd.docker.distribution.manifest.v2+json", digest: digests[0]}}, nil
	}
	if err := s.refresh(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.routes())
	defer srv.Close()
	// The runtime garbage-collects the image: its blobs leave the content store.
	for _, d := range digests {
		if err := os.Remove(filepath.Join(content, d[len("sha256:"):])); err != nil {
			t.Fatal(err)
		}
	}
	code, body, h := get(t, srv.URL+"/v2/e2e-test-images/agnhost/manifests/2.53?ns=registry.k8s.io")
	if code != 200 || body != manifest || h.Get("Docker-Content-Digest") != digests[0] ||
		h.Get("Content-Type") != "application/vnd.docker.distribution.manifest.v2+json" {
		t.Errorf("manifest by tag: %d %q %v", code, body, h)
	}
	if code, _, h := get(t, srv.URL+"/v2/e2e-test-images/agnhost/manifests/"+digests[0]); code != 200 ||
		h.Get("Content-Type") != "application/vnd.docker.distribution.manifest.v2+json" {
		t.Errorf("manifest by digest: %d %v", code, h)
	}
	if code, body, _ := get(t, srv.URL+"/v2/e2e-test-images/agnhost/blobs/"+digests[1]); code != 200 || body != "layer bytes" {
		t.Errorf("blob: %d %q", code, body)
	}
	if code, _, _ := get(t, srv.URL+"/v2/e2e-test-images/agnhost/manifests/9.99"); code != 404 {
		t.Errorf("unknown tag: %d, want 404", code)
	}
	if code, _, _ := get(t, srv.URL+"/v2/x/blobs/sha256:..%2F..%2Fetc%2Fpasswd"); code != 400 {
		t.Errorf("malformed digest: %d, want 400", code)
	}
	resp, err := http.Post(srv.URL+"/v2/x/blobs/uploads/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("upload: %d, want 405", resp.StatusCode)
	}
}
