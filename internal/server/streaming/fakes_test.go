package streaming

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// fakeRuntime is a hand-written cri.Streamer: it records requests and hands out URLs on
// a fake streaming server.
type fakeRuntime struct {
	mu       sync.Mutex
	url      string // returned by Exec, Attach and PortForward
	err      error  // returned by every call when set
	requests []any

	stdout, stderr []byte
	exitCode       int32
}

func (f *fakeRuntime) record(req any) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	return f.url, f.err
}

func (f *fakeRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	u, err := f.record(req)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecResponse{Url: u}, nil
}

func (f *fakeRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	u, err := f.record(req)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.AttachResponse{Url: u}, nil
}

func (f *fakeRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	u, err := f.record(req)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PortForwardResponse{Url: u}, nil
}

// execSyncCall is one recorded ExecSync.
type execSyncCall struct {
	containerID string
	cmd         []string
}

func (f *fakeRuntime) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, int32, error) {
	if _, err := f.record(execSyncCall{id, cmd}); err != nil {
		return nil, nil, 0, err
	}
	return f.stdout, f.stderr, f.exitCode, nil
}

func (f *fakeRuntime) calls() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]any(nil), f.requests...)
}

// echoServer stands in for the runtime's streaming server: it switches protocols, echoing the
// first protocol version the client offered, then sends back every byte upper-cased.
type echoServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
	// refuse, when set, is answered instead of the upgrade (an expired token, say).
	refuse int
}

func newEchoServer(t *testing.T) *echoServer {
	s := &echoServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *echoServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Clone(context.Background()))
	refuse := s.refuse
	s.mu.Unlock()
	if refuse != 0 {
		http.Error(w, "runtime says no", refuse)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	protocol := strings.TrimSpace(strings.Split(r.Header.Get("X-Stream-Protocol-Version"), ",")[0])
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\nX-Stream-Protocol-Version: %s\r\n\r\n",
		r.Header.Get("Upgrade"), protocol)
	rw.Flush()
	buf := make([]byte, 1024)
	for {
		n, err := rw.Read(buf)
		if n > 0 {
			rw.Write([]byte(strings.ToUpper(string(buf[:n]))))
			rw.Flush()
		}
		if err != nil {
			return
		}
	}
}

func (s *echoServer) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

// env is a nodelet API server with the streaming handlers mounted on the kubelet's patterns.
type env struct {
	t       *testing.T
	pods    *pod.Manager
	status  *container.PodStatus
	statErr error
	rt      *fakeRuntime
	backend *echoServer
	api     *httptest.Server
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, pods: pod.NewManager(), rt: &fakeRuntime{}, backend: newEchoServer(t)}
	e.rt.url = e.backend.URL + "/exec/token-1"
	e.pods.Set(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "main"}, {Name: "shell", TTY: true, Stdin: true}},
		},
	})
	e.status = &container.PodStatus{
		UID: "uid-web", Name: "web", Namespace: "default",
		Sandboxes: []*container.SandboxStatus{{ID: "sb-new", Ready: true}, {ID: "sb-old"}},
		Containers: []*container.ContainerStatus{
			{ID: "main-2", Name: "main", State: container.StateRunning},
			{ID: "main-1", Name: "main", State: container.StateExited},
			{ID: "shell-1", Name: "shell", State: container.StateRunning},
			{ID: "init-1", Name: "init", State: container.StateExited},
		},
	}
	h := New(Deps{Pods: e.pods, PodStatus: e.podStatus, Runtime: e.rt})
	e.api = httptest.NewServer(mux(h))
	t.Cleanup(e.api.Close)
	return e
}

func (e *env) podStatus(_ context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	if e.statErr != nil {
		return nil, e.statErr
	}
	if uid != e.status.UID || name != e.status.Name || namespace != e.status.Namespace {
		return nil, errors.New("status asked for the wrong pod")
	}
	return e.status, nil
}

// mux registers the handlers on the patterns the kubelet server uses.
func mux(h *Handlers) *http.ServeMux {
	m := http.NewServeMux()
	for prefix, handler := range map[string]http.Handler{"/exec/": h.Exec, "/attach/": h.Attach, "/run/": h.Run} {
		m.Handle(prefix+"{namespace}/{pod}/{container}", handler)
		m.Handle(prefix+"{namespace}/{pod}/{uid}/{container}", handler)
	}
	m.Handle("/portForward/{namespace}/{pod}", h.PortForward)
	m.Handle("/portForward/{namespace}/{pod}/{uid}", h.PortForward)
	return m
}

// upgrade opens a raw connection to the API and sends an upgrade request for path with the
// given Upgrade header and extra headers; it returns the response and the connection.
func (e *env) upgrade(method, path, upgrade string, header http.Header) (*http.Response, net.Conn, *bufio.Reader) {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.api.Listener.Addr().String())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	req, _ := http.NewRequest(method, e.api.URL+path, nil)
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", upgrade)
	if err := req.Write(conn); err != nil {
		e.t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, conn, br
}

// get sends a request (an upgrade unless plain) through the ordinary HTTP client and returns
// the status and body; for requests refused before any upgrade.
func (e *env) get(method, path string, plain bool) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.api.URL+path, nil)
	if !plain {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "SPDY/3.1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}
