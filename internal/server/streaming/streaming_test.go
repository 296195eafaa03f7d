package streaming

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

const spdyProtocols = "v4.channel.k8s.io, v3.channel.k8s.io"

// roundTrip writes msg on an upgraded connection and expects the echo server's upper-cased
// reply.
func roundTrip(t *testing.T, e *env, path string, header http.Header, msg string) *http.Response {
	t.Helper()
	resp, conn, br := e.upgrade(http.MethodPost, path, "SPDY/3.1", header)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d (%s), want 101", resp.StatusCode, body)
	}
	if _, err := conn.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, len(msg))
	if _, err := io.ReadFull(br, reply); err != nil {
		t.Fatalf("reading the echo: %v", err)
	}
	if string(reply) != strings.ToUpper(msg) {
		t.Fatalf("echo = %q, want %q", reply, strings.ToUpper(msg))
	}
	return resp
}

func TestExecProxiesTheUpgradedConnectionToTheRuntime(t *testing.T) {
	e := newEnv(t)
	header := http.Header{"X-Stream-Protocol-Version": {spdyProtocols}, "Authorization": {"Bearer secret"}}
	q := "?command=sh&command=-c&command=echo+hi&input=1&output=1&error=1&tty=1"
	resp := roundTrip(t, e, "/exec/default/web/main"+q, header, "hello runtime")

	if got := resp.Header.Get("X-Stream-Protocol-Version"); got != "v4.channel.k8s.io" {
		t.Errorf("negotiated protocol %q, want the runtime's choice v4.channel.k8s.io", got)
	}
	want := &runtimeapi.ExecRequest{
		ContainerId: "main-2", Cmd: []string{"sh", "-c", "echo hi"},
		Stdin: true, Stdout: true, Stderr: false /* merged into the tty */, Tty: true,
	}
	if calls := e.rt.calls(); len(calls) != 1 || !reflect.DeepEqual(calls[0], want) {
		t.Errorf("runtime calls %+v, want %+v", calls, want)
	}
	seen := e.backend.requests()
	if len(seen) != 1 {
		t.Fatalf("runtime streaming server saw %d requests", len(seen))
	}
	backend := seen[0]
	if backend.URL.Path != "/exec/token-1" || backend.Header.Get("Upgrade") != "SPDY/3.1" ||
		backend.Header.Get("X-Stream-Protocol-Version") != spdyProtocols {
		t.Errorf("runtime got %s %s with headers %v", backend.Method, backend.URL, backend.Header)
	}
	if backend.Header.Get("Authorization") != "" {
		t.Error("the client's credentials were forwarded to the runtime")
	}
	if backend.Host != strings.TrimPrefix(e.backend.URL, "http://") {
		t.Errorf("runtime saw Host %q", backend.Host)
	}
}

func TestStreamsWithUIDAndWebSocket(t *testing.T) {
	e := newEnv(t)
	header := http.Header{"Sec-Websocket-Protocol": {"v4.channel.k8s.io"}, "Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"x3JJHMbDL1EzLkh9GBhXDw=="}}
	resp, conn, br := e.upgrade(http.MethodGet, "/exec/default/web/uid-web/main?command=ls&output=1", "websocket", header)
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "websocket" {
		t.Fatalf("status %d upgrade %q", resp.StatusCode, resp.Header.Get("Upgrade"))
	}
	conn.Write([]byte("ws bytes"))
	reply := make([]byte, 8)
	if _, err := io.ReadFull(br, reply); err != nil || string(reply) != "WS BYTES" {
		t.Fatalf("echo %q, %v", reply, err)
	}
	if got := e.backend.requests()[0].Header.Get("Sec-Websocket-Key"); got != "x3JJHMbDL1EzLkh9GBhXDw==" {
		t.Errorf("WebSocket key not forwarded: %q", got)
	}
}

func TestStaticPodMirrorUIDIsAccepted(t *testing.T) {
	e := newEnv(t)
	web, _ := e.pods.GetByName("default", "web")
	e.pods.SetMirror(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: web.Name, Namespace: web.Namespace, UID: "uid-mirror"}})
	roundTrip(t, e, "/attach/default/web/uid-mirror/main?output=1", nil, "x")
}

func TestAttachTakesTTYFromTheContainerSpec(t *testing.T) {
	e := newEnv(t)
	roundTrip(t, e, "/attach/default/web/shell?input=1&output=1", nil, "typed")
	roundTrip(t, e, "/attach/default/web/main?output=1&error=1&tty=1", nil, "logs")
	calls := e.rt.calls()
	want := []any{
		&runtimeapi.AttachRequest{ContainerId: "shell-1", Stdin: true, Stdout: true, Tty: true},
		&runtimeapi.AttachRequest{ContainerId: "main-2", Stdout: true},
	}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("runtime calls %+v, want %+v", calls, want)
	}
}

func TestPortForwardUsesTheNewestReadySandbox(t *testing.T) {
	e := newEnv(t)
	e.status.Sandboxes = []*container.SandboxStatus{{ID: "sb-3"}, {ID: "sb-2", Ready: true}, {ID: "sb-1", Ready: true}}
	roundTrip(t, e, "/portForward/default/web", http.Header{"X-Stream-Protocol-Version": {"portforward.k8s.io"}}, "GET / HTTP/1.1")

	ws := http.Header{"Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
	resp, _, _ := e.upgrade(http.MethodGet, "/portForward/default/web/uid-web?port=8080&port=9090,53", "websocket", ws)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("websocket port-forward status %d", resp.StatusCode)
	}
	want := []any{
		&runtimeapi.PortForwardRequest{PodSandboxId: "sb-2"},
		&runtimeapi.PortForwardRequest{PodSandboxId: "sb-2", Port: []int32{8080, 9090, 53}},
	}
	if calls := e.rt.calls(); !reflect.DeepEqual(calls, want) {
		t.Errorf("runtime calls %+v, want %+v", calls, want)
	}
}

func TestRequestsRefusedBeforeTheUpgrade(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		path     string
		plain    bool // no Upgrade headers
		setup    func(e *env)
		wantCode int
		wantBody string
	}{
		{name: "unknown pod", path: "/exec/default/nope/main?command=ls&output=1", wantCode: 404, wantBody: "pod does not exist"},
		{name: "wrong namespace", path: "/attach/other/web/main?output=1", wantCode: 404, wantBody: "pod does not exist"},
		{name: "uid mismatch", path: "/exec/default/web/uid-other/main?command=ls&output=1", wantCode: 404, wantBody: "pod not found"},
		{name: "port-forward uid mismatch", path: "/portForward/default/web/uid-other", wantCode: 404, wantBody: "pod not found"},
		{name: "unknown container", path: "/exec/default/web/sidecar?command=ls&output=1", wantCode: 500, wantBody: `container not found ("sidecar")`},
		{name: "exited container", path: "/attach/default/web/init?output=1", wantCode: 500, wantBody: `container "init" in pod default/web is not running`},
		{name: "no streams", path: "/exec/default/web/main?command=ls&tty=1", wantCode: 400, wantBody: "you must specify at least 1 of stdin, stdout, stderr"},
		{name: "no command", path: "/exec/default/web/main?output=1", wantCode: 400, wantBody: `missing "command" parameter`},
		{name: "exec not upgraded", path: "/exec/default/web/main?command=ls&output=1", plain: true, wantCode: 400, wantBody: "Upgrade request required"},
		{name: "port-forward not upgraded", path: "/portForward/default/web", plain: true, wantCode: 400, wantBody: "Upgrade request required"},
		{name: "wrong method", method: http.MethodPut, path: "/exec/default/web/main?command=ls&output=1", wantCode: 405},
		{name: "no ready sandbox", path: "/portForward/default/web",
			setup: func(e *env) { e.status.Sandboxes = []*container.SandboxStatus{{ID: "sb-old"}} }, wantCode: 500, wantBody: "pod default/web has no running sandbox"},
		{name: "status unreadable", path: "/exec/default/web/main?command=ls&output=1",
			setup: func(e *env) { e.statErr = errors.New("runtime down") }, wantCode: 500, wantBody: "runtime down"},
		{name: "runtime not found", path: "/exec/default/web/main?command=ls&output=1",
			setup: func(e *env) { e.rt.err = grpcstatus.Error(codes.NotFound, "container gone") }, wantCode: 404, wantBody: "container gone"},
		{name: "runtime busy", path: "/attach/default/web/main?output=1",
			setup: func(e *env) { e.rt.err = grpcstatus.Error(codes.ResourceExhausted, "too many") }, wantCode: 429, wantBody: "too many"},
		{name: "runtime returns a relative URL", path: "/exec/default/web/main?command=ls&output=1",
			setup: func(e *env) { e.rt.url = "/exec/token" }, wantCode: 500, wantBody: "unusable streaming URL"},
		{name: "runtime refuses the upgrade", path: "/exec/default/web/main?command=ls&output=1",
			setup: func(e *env) { e.backend.refuse = http.StatusNotFound }, wantCode: 404, wantBody: "runtime says no"},
		{name: "runtime unreachable", path: "/exec/default/web/main?command=ls&output=1",
			setup: func(e *env) { e.rt.url = "http://127.0.0.1:1/exec/token" }, wantCode: 500, wantBody: "connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.setup != nil {
				tc.setup(e)
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			code, body := e.get(method, tc.path, tc.plain)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestRetryAfterOnBusyRuntime(t *testing.T) {
	e := newEnv(t)
	e.rt.err = grpcstatus.Error(codes.ResourceExhausted, "too many")
	req, _ := http.NewRequest(http.MethodGet, e.api.URL+"/attach/default/web/main?output=1", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestNoRuntimeCallForMalformedRequests(t *testing.T) {
	e := newEnv(t)
	e.get(http.MethodGet, "/exec/default/web/main?command=ls&output=1", true)
	e.get(http.MethodGet, "/portForward/default/web", true)
	e.get(http.MethodGet, "/exec/default/web/main?command=ls", false)
	if calls := e.rt.calls(); len(calls) != 0 {
		t.Errorf("runtime was called for requests that could not stream: %+v", calls)
	}
}

func TestWebSocketPortForwardNeedsPorts(t *testing.T) {
	e := newEnv(t)
	ws := http.Header{"Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
	for query, want := range map[string]string{
		"":           `query parameter "port" is required`,
		"?port=http": `unable to parse "http" as a port`,
		"?port=0":    `port "0" must be > 0`,
		"?port=1,,2": `unable to parse "" as a port`,
		"?port=7000": "",
	} {
		resp, _, _ := e.upgrade(http.MethodGet, "/portForward/default/web"+query, "websocket", ws)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if want == "" {
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Errorf("%q: status %d %s", query, resp.StatusCode, body)
			}
			continue
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("%q: got %d %q, want 400 containing %q", query, resp.StatusCode, body, want)
		}
	}
}

func TestParseStreamOptions(t *testing.T) {
	tests := []struct {
		query string
		want  streamOptions
		err   bool
	}{
		{query: "input=1&output=1&error=1", want: streamOptions{stdin: true, stdout: true, stderr: true}},
		{query: "stdin=1&stdout=1&stderr=1", want: streamOptions{stdin: true, stdout: true, stderr: true}},
		{query: "output=1&tty=1&error=1", want: streamOptions{stdout: true, tty: true}},
		{query: "input=0&output=false", err: true},
		{query: "stdout=true&tty=TRUE&stderr=1", want: streamOptions{stdout: true, tty: true}},
		{query: "stdout=0&stderr=false&stdin=yes", err: true},
		{query: "tty=1", err: true},
		{query: "stderr=1", want: streamOptions{stderr: true}},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodGet, "/exec/a/b/c?"+tc.query, nil)
		got, err := parseStreamOptions(r)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v (error %v)", tc.query, got, err, tc.want, tc.err)
		}
	}
	// A form body counts as well as the query.
	r := httptest.NewRequest(http.MethodPost, "/exec/a/b/c", strings.NewReader(url.Values{"stdin": {"1"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if got, err := parseStreamOptions(r); err != nil || !got.stdin {
		t.Errorf("form body: %+v, %v", got, err)
	}
}

func TestSessionOutlivesServerTimeouts(t *testing.T) {
	e := newEnv(t)
	// A server with short request timeouts, as a misconfigured API server might have.
	e.api.Close()
	e.api = httptest.NewUnstartedServer(mux(New(Deps{Pods: e.pods, PodStatus: e.podStatus, Runtime: e.rt})))
	e.api.Config.ReadTimeout = 100 * time.Millisecond
	e.api.Config.WriteTimeout = 100 * time.Millisecond
	e.api.Start()
	t.Cleanup(e.api.Close)

	resp, conn, br := e.upgrade(http.MethodGet, "/exec/default/web/main?command=sh&input=1&output=1", "SPDY/3.1", nil)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", resp.StatusCode)
	}
	time.Sleep(300 * time.Millisecond) // past both server timeouts
	conn.Write([]byte("still here"))
	reply := make([]byte, 10)
	if _, err := io.ReadFull(br, reply); err != nil || string(reply) != "STILL HERE" {
		t.Fatalf("after the server timeouts: %q, %v", reply, err)
	}
}
