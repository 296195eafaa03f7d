//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

func TestRunOnceStartsPodsReportsAndExits(t *testing.T) {
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ro1", "ro2"} {
		content := podYAML(name, "Always", "exec sleep 3600")
		if err := os.WriteFile(filepath.Join(manifests, name+".yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(nodeletBin, "--runonce", "--pod-manifest-path="+manifests, "--root-dir="+filepath.Join(dir, "root"),
		"--container-runtime-endpoint="+endpoint, "--hostname-override="+nodeName, "--fail-swap-on=false")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("runonce failed: %v\n%s", err, tail(stderr.String(), 3000))
	}
	for _, name := range []string{"ro1-" + nodeName, "ro2-" + nodeName} {
		if !strings.Contains(string(out), name) || !strings.Contains(string(out), "Running") {
			t.Fatalf("runonce output lacks %s Running:\n%s", name, out)
		}
		if runningContainer(t, strings.TrimSuffix(name, "-"+nodeName), "main") == nil {
			t.Fatalf("%s not running after runonce exited", name)
		}
	}
	// A regular nodelet with no manifests treats the run-once pods as orphans and removes them.
	startNodelet(t)
	testutil.WaitFor(t, 30*time.Second, "run-once pods removed", func() (bool, string) {
		return len(sandboxes(t, "ro1")) == 0 && len(sandboxes(t, "ro2")) == 0, "still there"
	})
}

// manifestServer serves a settable body and records the headers it was asked with.
type manifestServer struct {
	mu     sync.Mutex
	body   string
	header http.Header
}

func (s *manifestServer) set(body string) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

func (s *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.header = r.Header.Clone()
	fmt.Fprint(w, s.body)
}

func TestManifestURLSource(t *testing.T) {
	srv := &manifestServer{body: podYAML("fromurl", "Always", "exec sleep 3600")}
	ts := httptest.NewServer(srv) // loopback only
	defer ts.Close()
	startNodelet(t, "--manifest-url="+ts.URL, "--manifest-url-header=X-Token:secret", "--http-check-frequency=1s")
	waitRunning(t, "fromurl", "main", 60*time.Second)
	srv.mu.Lock()
	token := srv.header.Get("X-Token")
	srv.mu.Unlock()
	if token != "secret" {
		t.Fatalf("manifest URL fetched without the header; X-Token=%q", token)
	}
	srv.set(`{"apiVersion":"v1","kind":"PodList","items":[]}`)
	testutil.WaitFor(t, 30*time.Second, "pod removed after the URL dropped it", func() (bool, string) {
		return len(sandboxes(t, "fromurl")) == 0, "still there"
	})
}
