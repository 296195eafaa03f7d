package podrun

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/pod/source"
)

func webManifest(image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: %s
`, image)
}

// fakeDaemon serves /pods as a daemon watching dir would: every manifest there, with the
// status status gives it.
func fakeDaemon(t *testing.T, dir string, status func(*v1.Pod) v1.PodStatus) *API {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pods" {
			http.NotFound(w, r)
			return
		}
		list := v1.PodList{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if source.IgnoredManifestName(e.Name()) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			data, _ := os.ReadFile(path)
			if pod, err := source.ReadManifest(data, path, "node1"); err == nil {
				pod.Status = status(pod)
				list.Items = append(list.Items, *pod)
			}
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	return &API{URL: srv.URL, Client: srv.Client()}
}

func ready(*v1.Pod) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
}

func handOff(dir, from, manifest string, api *API, out *strings.Builder) *HandOff {
	return &HandOff{Manifest: []byte(manifest), From: from, Dir: dir, NodeName: "node1", PodLogsDir: "/var/log/pods",
		API: api, NoAPI: "the read-only port is off and the kubelet API needs credentials", Wait: 5 * time.Second, Out: out}
}

// The manifest lands, unchanged and atomically, in the static pod directory under its own
// name; the run waits for the daemon to show the pod Ready and says how to follow it.
func TestHandOffWritesAndWaitsForReady(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	h := handOff(dir, "/home/me/web.yaml", webManifest("nginx:1"), fakeDaemon(t, dir, ready), &out)
	if err := h.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "web.yaml"))
	if err != nil || string(got) != webManifest("nginx:1") {
		t.Fatalf("static dir holds %q (%v), want the manifest as given", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the static dir, want only web.yaml (no temporary file left)", len(entries))
	}
	for _, want := range []string{"pod default/web-node1 handed to the nodelet daemon: wrote " + filepath.Join(dir, "web.yaml"),
		"pod default/web-node1 is Ready", "nodelet explain default/web-node1", "/var/log/pods/default_web-node1_", "rm " + filepath.Join(dir, "web.yaml")} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, out.String())
		}
	}

	// Handing the same manifest again changes nothing and succeeds.
	out.Reset()
	if err := h.Run(context.Background()); err != nil || !strings.Contains(out.String(), "already holds this manifest") {
		t.Errorf("second hand-off: %v\n%s", err, out.String())
	}
}

// What the daemon would refuse is refused here, before anything is written.
func TestHandOffRefusesWhatTheDaemonWouldNot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webManifest("nginx:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, manifest, want string
	}{
		{"bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [oops\n", "bad.yaml: not a JSON or YAML object"},
		{"bad.yaml", strings.Replace(webManifest("nginx:1"), "name: web", "name: Web_1", 1), "metadata.name"},
		{"web.yaml", webManifest("nginx:2"), "already holds a different manifest"},
		{"other.yaml", webManifest("nginx:2"), "pod default/web-node1 is already defined by " + filepath.Join(dir, "web.yaml")},
	} {
		var out strings.Builder
		err := handOff(dir, tc.from, tc.manifest, nil, &out).Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.from, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the static dir after refusals, want 1", len(entries))
	}
	var out strings.Builder
	err := handOff(filepath.Join(dir, "web.yaml"), "x.yaml", webManifest("nginx:1"), nil, &out).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is a file, not a directory") {
		t.Errorf("staticPodPath a file: %v", err)
	}
}

// A pod the daemon cannot start, or that failed, is reported with the reason; without a
// readable API the command says so and does not wait.
func TestHandOffReportsFailuresAndMissingAPI(t *testing.T) {
	dir := t.TempDir()
	backOff := func(*v1.Pod) v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "app",
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}}
	}
	var out strings.Builder
	err := handOff(dir, "web.yaml", webManifest("nope:1"), fakeDaemon(t, dir, backOff), &out).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "container app: ImagePullBackOff: Back-off pulling image") {
		t.Errorf("image pull back-off: %v", err)
	}

	dir = t.TempDir()
	failed := func(*v1.Pod) v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{terminated("app", 2)}}
	}
	err = handOff(dir, "web.yaml", webManifest("nginx:1"), fakeDaemon(t, dir, failed), &out).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Failed: container app exited with code 2") {
		t.Errorf("failed pod: %v", err)
	}

	dir = t.TempDir()
	pending := func(*v1.Pod) v1.PodStatus { return v1.PodStatus{Phase: v1.PodPending} }
	h := handOff(dir, "web.yaml", webManifest("nginx:1"), fakeDaemon(t, dir, pending), &out)
	h.Wait = 100 * time.Millisecond
	if err := h.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "is not Ready after 100ms") {
		t.Errorf("pod never ready: %v", err)
	}

	dir = t.TempDir()
	out.Reset()
	if err := handOff(dir, "-", webManifest("nginx:1"), nil, &out).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "web.yaml")); err != nil {
		t.Errorf("a manifest from standard input is not named after its pod: %v", err)
	}
	if !strings.Contains(out.String(), "not waiting for it: the read-only port is off") {
		t.Errorf("output:\n%s", out.String())
	}
}
