package checkpoint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

type fakePods map[string]*v1.Pod

func (f fakePods) GetByName(ns, name string) (*v1.Pod, bool) { p, ok := f[ns+"/"+name]; return p, ok }

// fakeRuntime runs one pod with a running "app" and an exited "done", and records requests.
type fakeRuntime struct {
	err  error
	reqs []*runtimeapi.CheckpointContainerRequest
}

func (f *fakeRuntime) GetPods(context.Context, bool) ([]*container.RunningPod, error) {
	return []*container.RunningPod{{UID: "uid-1", Name: "web", Namespace: "ns", Containers: []*container.ContainerStatus{
		{ID: "c-app", Name: "app", State: container.StateRunning},
		{ID: "c-done", Name: "done", State: container.StateExited},
	}}}, nil
}

func (f *fakeRuntime) CheckpointContainer(_ context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	f.reqs = append(f.reqs, req)
	return f.err
}

func testPod() fakePods {
	return fakePods{"ns/web": {ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}, Spec: v1.PodSpec{
		Containers:          []v1.Container{{Name: "app"}, {Name: "done"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
	}}}
}

func serve(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /checkpoint/{namespace}/{pod}/{container}", h)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, target, nil))
	return rec
}

func TestCheckpointWritesUnderRootDirAndAnswersItsPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	rt := &fakeRuntime{}
	h := &handler{pods: testPod(), rt: rt, dir: dir, now: func() time.Time { return time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC) }}
	rec := serve(t, h, "/checkpoint/ns/web/app?timeout=30&timeout=90")
	want := filepath.Join(dir, "checkpoint-web_ns-app-2026-11-29T01:02:03Z.tar")
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"items":["`+want+`"]}` {
		t.Fatalf("answer %d %q, want 200 with the archive path %s", rec.Code, rec.Body, want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if len(rt.reqs) != 1 || rt.reqs[0].ContainerId != "c-app" || rt.reqs[0].Location != want || rt.reqs[0].Timeout != 90 {
		t.Errorf("CRI request %+v, want container c-app, the path and the last timeout", rt.reqs)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("checkpoints directory: %v %v", fi, err)
	}
}

func TestCheckpointRefusals(t *testing.T) {
	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{"/checkpoint/ns/nope/app", http.StatusNotFound, "pod does not exist"},
		{"/checkpoint/ns/web/other", http.StatusNotFound, "container other does not exist"},
		{"/checkpoint/ns/web/app?timeout=soon", http.StatusNotFound, "cannot parse value of timeout parameter"},
		{"/checkpoint/ns/web/done", http.StatusInternalServerError, "checkpointing of ns/web/done failed (container done not found)"},
		{"/checkpoint/ns/web/debug", http.StatusInternalServerError, "checkpointing of ns/web/debug failed (container debug not found)"},
	} {
		rt := &fakeRuntime{}
		rec := serve(t, Handler(testPod(), rt, t.TempDir()), tc.target)
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.target, rec.Code, rec.Body, tc.code, tc.body)
		}
		if len(rt.reqs) != 0 {
			t.Errorf("%s: runtime asked %v", tc.target, rt.reqs)
		}
	}
}

// runtimeWithoutCheckpoint is the pods of fakeRuntime over the fake CRI, which (as containerd
// 1.6) does not implement CheckpointContainer.
type runtimeWithoutCheckpoint struct {
	*fakeRuntime
	*cri.Client
}

func (r runtimeWithoutCheckpoint) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	return r.Client.CheckpointContainer(ctx, req)
}

func TestCheckpointAnswersTheRuntimesOwnError(t *testing.T) {
	_, endpoint := fakecri.Start(t)
	client, err := cri.Connect(endpoint, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rec := serve(t, Handler(testPod(), runtimeWithoutCheckpoint{&fakeRuntime{}, client}, t.TempDir()), "/checkpoint/ns/web/app")
	want := "checkpointing of ns/web/app failed (rpc error: code = Unimplemented desc = method CheckpointContainer not implemented)"
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != want {
		t.Errorf("%d %q, want 500 %q", rec.Code, rec.Body, want)
	}
}
