// Command registry serves the images of the project containerd read-only over the OCI
// distribution API on a loopback address, holding each request for -delay if asked: the e2e
// tests' slow registry, for a pull cancelled midway (the distribution registry cannot be made
// slow). The blobs are the runtime's own, hard-linked into its own directory so an image the
// runtime deletes can still be pulled back. The project registry the tests, the bench and the
// conformance run pull from is the distribution registry (hack/images.sh push).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

type server struct {
	socket, namespace, contentDir, dataDir, defaultHost string
	// delay holds every manifest and blob request this long (tests of a pull that is cancelled).
	delay time.Duration

	list  func() (map[string]image, error) // the runtime's images; tests replace it
	mu    sync.Mutex
	index map[string]image // reference → manifest, as last seen in the runtime
}

func main() {
	var s server
	addr := flag.String("addr", "127.0.0.1:5002", "loopback address to serve on (127.0.0.1:5000 is the project registry)")
	flag.StringVar(&s.socket, "socket", "/run/nodelet/containerd/containerd.sock", "containerd socket")
	flag.StringVar(&s.namespace, "namespace", "k8s.io", "containerd namespace whose images are served")
	flag.StringVar(&s.contentDir, "content", "/var/lib/nodelet/containerd/io.containerd.content.v1.content/blobs/sha256", "containerd's content store")
	flag.StringVar(&s.dataDir, "data", "/var/lib/nodelet/registry", "where the served blobs are linked (same filesystem as -content)")
	flag.StringVar(&s.defaultHost, "host", "registry.k8s.io", "registry a request without containerd's ns parameter is for")
	flag.DurationVar(&s.delay, "delay", 0, "hold every manifest and blob request this long before answering (a slow registry, for tests)")
	flag.Parse()
	s.list = s.runtimeImages
	if err := s.refresh(); err != nil {
		log.Fatal(err)
	}
	log.Printf("registry: serving the images of %s (namespace %s) on http://%s", s.socket, s.namespace, *addr)
	log.Fatal(http.ListenAndServe(*addr, s.routes()))
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v2/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
			return
		}
		path := strings.TrimPrefix(r.URL.Path, "/v2/")
		if path == "" {
			w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
			fmt.Fprint(w, "{}")
			return
		}
		if !s.hold(r) {
			return
		}
		if i := strings.LastIndex(path, "/manifests/"); i > 0 {
			s.manifest(w, r, path[:i], path[i+len("/manifests/"):])
			return
		}
		if i := strings.LastIndex(path, "/blobs/"); i > 0 {
			s.blob(w, r, path[i+len("/blobs/"):], "application/octet-stream")
			return
		}
		http.NotFound(w, r)
	})
	return mux
}

// hold waits s.delay before a request is answered; it reports false, and logs it, when the
// client gave up first.
func (s *server) hold(r *http.Request) bool {
	if s.delay <= 0 {
		return true
	}
	start := time.Now()
	select {
	case <-time.After(s.delay):
		return true
	case <-r.Context().Done():
		log.Printf("registry: %s %s: the client went away after %v", r.Method, r.URL.Path, time.Since(start).Round(10*time.Millisecond))
		return false
	}
}

// manifest answers a manifest by tag (looked up among the runtime's images) or by digest.
func (s *server) manifest(w http.ResponseWriter, r *http.Request, name, reference string) {
	if digestPattern.MatchString(reference) {
		s.blob(w, r, reference, "")
		return
	}
	host := r.URL.Query().Get("ns")
	if host == "" {
		host = s.defaultHost
	}
	ref := host + "/" + name + ":" + reference
	img, ok := s.lookup(ref)
	if !ok {
		log.Printf("registry: %s %s: not in the runtime", r.Method, ref)
		http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`, http.StatusNotFound)
		return
	}
	log.Printf("registry: %s %s -> %s", r.Method, ref, img.digest)
	s.blob(w, r, img.digest, img.mediaType)
}

// blob serves one blob of the content store; an empty mediaType is read from the blob itself.
func (s *server) blob(w http.ResponseWriter, r *http.Request, digest, mediaType string) {
	if !digestPattern.MatchString(digest) {
		http.Error(w, `{"errors":[{"code":"DIGEST_INVALID"}]}`, http.StatusBadRequest)
		return
	}
	data, err := os.ReadFile(filepath.Join(s.dataDir, strings.TrimPrefix(digest, "sha256:")))
	if err != nil {
		http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
		return
	}
	if mediaType == "" {
		mediaType = sniffManifestType(data)
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	if r.Method == http.MethodGet {
		_, _ = w.Write(data)
	}
}

// sniffManifestType is a manifest's own mediaType field, or the OCI type its shape implies.
func sniffManifestType(data []byte) string {
	var m struct {
		MediaType string            `json:"mediaType"`
		Manifests []json.RawMessage `json:"manifests"`
	}
	switch {
	case json.Unmarshal(data, &m) != nil:
		return "application/octet-stream"
	case m.MediaType != "":
		return m.MediaType
	case m.Manifests != nil:
		return "application/vnd.oci.image.index.v1+json"
	default:
		return "application/vnd.oci.image.manifest.v1+json"
	}
}

type image struct{ mediaType, digest string }

// lookup finds ref among the images seen so far, looking at the runtime again on a miss.
func (s *server) lookup(ref string) (image, bool) {
	s.mu.Lock()
	img, ok := s.index[ref]
	s.mu.Unlock()
	if ok {
		return img, true
	}
	if err := s.refresh(); err != nil {
		log.Printf("registry: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	img, ok = s.index[ref]
	return img, ok
}

// refresh adds the runtime's current images to the index and links their blobs (every blob of
// the content store) into the data directory. Images the runtime lost stay served.
func (s *server) refresh() error {
	images, err := s.list()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return err
	}
	blobs, err := os.ReadDir(s.contentDir)
	if err != nil {
		return fmt.Errorf("reading the content store: %w", err)
	}
	for _, b := range blobs {
		err := os.Link(filepath.Join(s.contentDir, b.Name()), filepath.Join(s.dataDir, b.Name()))
		if err != nil && !os.IsExist(err) {
			return fmt.Errorf("linking blob %s: %w (-data must be on the content store's filesystem)", b.Name(), err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index == nil {
		s.index = map[string]image{}
	}
	for ref, img := range images {
		s.index[ref] = img
	}
	return nil
}

// runtimeImages lists the runtime's images by reference, as `ctr images ls` prints them.
func (s *server) runtimeImages() (map[string]image, error) {
	out, err := exec.Command("ctr", "--address", s.socket, "-n", s.namespace, "images", "ls").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the runtime's images: %w", err)
	}
	images := map[string]image{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for first := true; sc.Scan(); first = false {
		fields := strings.Fields(sc.Text())
		if first || len(fields) < 3 {
			continue // the header
		}
		images[fields[0]] = image{mediaType: fields[1], digest: fields[2]}
	}
	return images, nil
}
