package logs

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// fakeRuntime holds container log files and states by container ID, and pod statuses.
type fakeRuntime struct {
	mu        sync.Mutex
	logs      map[string]*container.ContainerLog
	status    *container.PodStatus
	statusErr error
}

func (f *fakeRuntime) ContainerLog(_ context.Context, id string) (*container.ContainerLog, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.logs[id]
	if !ok {
		return nil, container.ErrContainerNotFound
	}
	c := *l
	return &c, nil
}

func (f *fakeRuntime) setState(id string, s container.ContainerState) {
	f.mu.Lock()
	f.logs[id].State = s
	f.mu.Unlock()
}

func (f *fakeRuntime) Status(_ context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	return f.status, nil
}

type handlerEnv struct {
	t      *testing.T
	dir    string
	pods   *pod.Manager
	rt     *fakeRuntime
	server *httptest.Server
}

// newHandlerEnv serves a pod "web-node1" with containers "init" and "app"; "app" has two
// instances: app-0 (exited, log "old") and app-1 (running, the sample log).
func newHandlerEnv(t *testing.T) *handlerEnv {
	e := &handlerEnv{t: t, dir: t.TempDir(), pods: pod.NewManager()}
	e.pods.Set(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "app"}, {Name: "side"}},
		},
	})
	oldLog := filepath.Join(e.dir, "app-0.log")
	writeFile(t, oldLog, criLine(0, "stdout", "F", "old"))
	curLog := filepath.Join(e.dir, "app-1.log")
	writeFile(t, curLog, readFile(t, sampleLog(t)))
	e.rt = &fakeRuntime{
		logs: map[string]*container.ContainerLog{
			"app-0": {ContainerID: "app-0", Path: oldLog, State: container.StateExited},
			"app-1": {ContainerID: "app-1", Path: curLog, State: container.StateRunning},
		},
		status: &container.PodStatus{UID: "uid-web", Name: "web-node1", Namespace: "default", Containers: []*container.ContainerStatus{
			{ID: "app-1", Name: "app", State: container.StateRunning, RestartCount: 1},
			{ID: "app-0", Name: "app", State: container.StateExited},
		}},
	}
	mux := http.NewServeMux()
	mux.Handle("/containerLogs/{namespace}/{pod}/{container}", NewContainerLogsHandler(Deps{Pods: e.pods, Status: e.rt.Status, Runtime: e.rt}))
	e.server = httptest.NewServer(mux)
	t.Cleanup(e.server.Close)
	return e
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (e *handlerEnv) get(path string) (int, string) {
	e.t.Helper()
	resp, err := http.Get(e.server.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestContainerLogsErrors(t *testing.T) {
	e := newHandlerEnv(t)
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/containerLogs/default/nope/app", 404, `pod "nope" does not exist`},
		{"/containerLogs/other/web-node1/app", 404, `pod "web-node1" does not exist`},
		{"/containerLogs/default/web-node1/nope", 404, `container "nope" not found in pod "web-node1"`},
		{"/containerLogs/default/web-node1/app?tailLines=abc", 400, "Unable to decode query."},
		{"/containerLogs/default/web-node1/app?sinceTime=yesterday", 400, "Unable to decode query."},
		{"/containerLogs/default/web-node1/app?tailLines=-1", 422, "Invalid request."},
		{"/containerLogs/default/web-node1/app?limitBytes=0", 422, "Invalid request."},
		{"/containerLogs/default/web-node1/app?sinceSeconds=0", 422, "Invalid request."},
		{"/containerLogs/default/web-node1/app?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z", 422, "Invalid request."},
		{"/containerLogs/default/web-node1/app?stream=bogus", 422, "Invalid request."},
		{"/containerLogs/default/web-node1/app?stream=Stdout&tailLines=1", 422, "Invalid request."},
		{"/containerLogs/default/web-node1/side?previous=true", 400, `previous terminated container "side" in pod "web-node1" not found`},
		{"/containerLogs/default/web-node1/side", 400, `container "side" in pod "web-node1" is waiting to start - no logs yet`},
	} {
		code, body := e.get(tc.path)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s: %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
		}
	}

	e.rt.statusErr = errors.New("runtime down")
	if code, body := e.get("/containerLogs/default/web-node1/app"); code != 400 || !strings.Contains(body, "runtime down") {
		t.Errorf("status error: %d %q", code, body)
	}
}

func TestContainerLogsWaitingReasonFromPodStatus(t *testing.T) {
	e := newHandlerEnv(t)
	p, _ := e.pods.GetByName("default", "web-node1")
	p = p.DeepCopy()
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "side", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
	e.pods.Set(p)
	code, body := e.get("/containerLogs/default/web-node1/side")
	if want := `container "side" in pod "web-node1" is waiting to start: trying and failing to pull image`; code != 400 || !strings.Contains(body, want) {
		t.Errorf("%d %q, want 400 %q", code, body, want)
	}
}

func TestContainerLogsReadsTheRightInstance(t *testing.T) {
	e := newHandlerEnv(t)
	ts := base.Add(4 * time.Second).Format(time.RFC3339Nano)
	for _, tc := range []struct{ query, want string }{
		{"", "one\ntwo-a two-b\nerr\nthree\n"},
		{"?tailLines=2", "err\nthree\n"},
		{"?tail=1", "three\n"},
		{"?tail=all", "one\ntwo-a two-b\nerr\nthree\n"},
		{"?tailLines=1&timestamps=true", ts + " three\n"},
		{"?stream=Stderr", "err\n"},
		{"?stream=All&tailLines=1", "three\n"},
		{"?limitBytes=5", "one\nt"},
		{"?sinceTime=" + base.Add(3*time.Second).Format(time.RFC3339), "err\nthree\n"},
		{"?sinceSeconds=1", ""}, // the sample entries are from 2024
		{"?previous=true", "old\n"},
		{"?previous=1&timestamps", base.Format(time.RFC3339Nano) + " old\n"},
	} {
		code, body := e.get("/containerLogs/default/web-node1/app" + tc.query)
		if code != 200 || body != tc.want {
			t.Errorf("%q: %d %q, want 200 %q", tc.query, code, body, tc.want)
		}
	}

	// A new instance that never started: its predecessor's logs are shown.
	e.rt.status.Containers = append([]*container.ContainerStatus{{ID: "app-2", Name: "app", State: container.StateCreated}}, e.rt.status.Containers...)
	if code, body := e.get("/containerLogs/default/web-node1/app?tailLines=1"); code != 200 || body != "three\n" {
		t.Errorf("created newest: %d %q", code, body)
	}
}

func TestContainerLogsFollowStreams(t *testing.T) {
	e := newHandlerEnv(t)
	resp, err := http.Get(e.server.URL + "/containerLogs/default/web-node1/app?follow=true&tailLines=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := bufio.NewReader(resp.Body)
	readLine := func() string {
		t.Helper()
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		return l
	}
	if l := readLine(); l != "three\n" {
		t.Fatalf("first line %q", l)
	}
	// Each appended line arrives while the response is still open: it was flushed.
	path := e.rt.logs["app-1"].Path
	appendFile(t, path, criLine(9, "stdout", "F", "four"))
	if l := readLine(); l != "four\n" {
		t.Fatalf("followed line %q", l)
	}
	e.rt.setState("app-1", container.StateExited)
	rest, err := io.ReadAll(lines)
	if err != nil || len(rest) != 0 {
		t.Fatalf("after the container stopped: %q, %v", rest, err)
	}
}
