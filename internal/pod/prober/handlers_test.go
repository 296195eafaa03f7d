package prober

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serverPort returns the port an httptest server listens on.
func serverPort(t *testing.T, s *httptest.Server) int {
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	return port
}

func httpProbeOn(path string, port intstr.IntOrString, headers ...v1.HTTPHeader) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: port, HTTPHeaders: headers}}}
}

func TestHTTPProbe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("fine")) })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/redirect-local", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/redirect-fail", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/fail", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	port := serverPort(t, srv)
	// Same port, other host name: a redirect there is not followed.
	mux.HandleFunc("/redirect-away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+strconv.Itoa(port)+"/ok", http.StatusFound)
	})
	spec := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}

	tests := []struct {
		name       string
		probe      *v1.Probe
		want       result
		warning    bool
		wantOutput string
		wantErr    bool
	}{
		{name: "2xx passes", probe: httpProbeOn("/ok", intstr.FromInt32(int32(port))), want: success, wantOutput: "fine"},
		{name: "named port", probe: httpProbeOn("/ok", intstr.FromString("http")), want: success},
		{name: "5xx fails", probe: httpProbeOn("/fail", intstr.FromInt32(int32(port))), want: failure,
			wantOutput: "HTTP probe failed with statuscode: 503"},
		{name: "same-host redirect followed", probe: httpProbeOn("/redirect-local", intstr.FromString("http")), want: success, wantOutput: "fine"},
		{name: "followed redirect to a failure fails", probe: httpProbeOn("/redirect-fail", intstr.FromString("http")), want: failure},
		{name: "redirect to another host passes with a warning", probe: httpProbeOn("/redirect-away", intstr.FromString("http")),
			want: success, warning: true, wantOutput: "Probe terminated redirects"},
		{name: "unknown named port errors", probe: httpProbeOn("/ok", intstr.FromString("nope")), wantErr: true},
		{name: "nothing listening fails", probe: httpProbeOn("/ok", intstr.FromInt32(1)), want: failure, wantOutput: "Get \"http://127.0.0.1:1/ok\""},
	}
	m := New(Deps{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := m.handle(context.Background(), tt.probe, spec, "127.0.0.1", "", time.Second)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.res != tt.want || out.warning != tt.warning || !strings.HasPrefix(out.output, tt.wantOutput) {
				t.Errorf("got %+v, want result %v warning %v output %q", out, tt.want, tt.warning, tt.wantOutput)
			}
		})
	}
}

func TestHTTPProbeHeaders(t *testing.T) {
	got := make(chan *http.Request, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r }))
	defer srv.Close()
	port := intstr.FromInt32(int32(serverPort(t, srv)))
	m := New(Deps{})

	p := httpProbeOn("/h?x=1", port, v1.HTTPHeader{Name: "X-Custom", Value: "a"},
		v1.HTTPHeader{Name: "Host", Value: "example.test"})
	if out, err := m.handle(context.Background(), p, nil, "127.0.0.1", "", time.Second); err != nil || out.res != success {
		t.Fatalf("probe: %+v %v", out, err)
	}
	r := <-got
	if r.URL.Path != "/h" || r.URL.RawQuery != "x=1" {
		t.Errorf("request URL %s", r.URL)
	}
	if r.Host != "example.test" || r.Header.Get("X-Custom") != "a" {
		t.Errorf("host %q headers %v", r.Host, r.Header)
	}
	if ua := r.Header.Get("User-Agent"); ua != "kube-probe/1.33" {
		t.Errorf("User-Agent %q", ua)
	}
	if a := r.Header.Get("Accept"); a != "*/*" {
		t.Errorf("Accept %q", a)
	}

	p = httpProbeOn("/", port, v1.HTTPHeader{Name: "User-Agent", Value: "mine"})
	if _, err := m.handle(context.Background(), p, nil, "127.0.0.1", "", time.Second); err != nil {
		t.Fatal(err)
	}
	if ua := (<-got).Header.Get("User-Agent"); ua != "mine" {
		t.Errorf("User-Agent %q, want the probe's own", ua)
	}
}

func TestHTTPSProbeSkipsVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	p := httpProbeOn("/", intstr.FromInt32(int32(serverPort(t, srv))))
	p.HTTPGet.Scheme = v1.URISchemeHTTPS
	out, err := New(Deps{}).handle(context.Background(), p, nil, "127.0.0.1", "", time.Second)
	if err != nil || out.res != success {
		t.Fatalf("https probe: %+v %v", out, err)
	}
}

func TestHTTPProbeTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	p := httpProbeOn("/", intstr.FromInt32(int32(serverPort(t, srv))))
	out, err := New(Deps{}).handle(ctx, p, nil, "127.0.0.1", "", 50*time.Millisecond)
	if err != nil || out.res != failure {
		t.Fatalf("slow server: %+v %v, want failure", out, err)
	}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	m := New(Deps{})
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}
	if out, err := m.handle(context.Background(), p, nil, "127.0.0.1", "", time.Second); err != nil || out.res != success {
		t.Fatalf("listening port: %+v %v", out, err)
	}
	ln.Close()
	out, err := m.handle(context.Background(), p, nil, "127.0.0.1", "", time.Second)
	if err != nil || out.res != failure || !strings.Contains(out.output, "connection refused") {
		t.Fatalf("closed port: %+v %v, want failure with connection refused", out, err)
	}
	// Host set on the probe wins over the pod IP.
	p.TCPSocket.Host = "127.0.0.1"
	if _, err := m.handle(context.Background(), p, nil, "", "", time.Second); err != nil {
		t.Errorf("host given, no pod IP: %v", err)
	}
	p.TCPSocket.Host = ""
	if _, err := m.handle(context.Background(), p, nil, "", "", time.Second); err == nil {
		t.Errorf("no host and no pod IP: want an error")
	}
}

func TestGRPCProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	// A gRPC server without the health service.
	bareLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bare := grpc.NewServer()
	go func() { _ = bare.Serve(bareLn) }()
	defer bare.Stop()
	barePort := int32(bareLn.Addr().(*net.TCPAddr).Port)

	svc := func(s string) *string { return &s }
	tests := []struct {
		name       string
		port       int32
		service    *string
		want       result
		wantOutput string
	}{
		{"overall serving", port, nil, success, ""},
		{"service not serving", port, svc("down"), failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", port, svc("nope"), failure, "error: health rpc probe failed"},
		{"no health service", barePort, nil, failure, "error: this server does not implement the grpc health protocol"},
	}
	m := New(Deps{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: tt.port, Service: tt.service}}}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			out, err := m.handle(ctx, p, nil, "127.0.0.1", "", 5*time.Second)
			if err != nil || out.res != tt.want || !strings.HasPrefix(out.output, tt.wantOutput) {
				t.Errorf("got %+v %v, want %v with output %q", out, err, tt.want, tt.wantOutput)
			}
		})
	}
}

func TestExecProbe(t *testing.T) {
	f := newFixture(t)
	f.exec.reply("ok", execReply{output: "fine"})
	f.exec.reply("bad", execReply{output: "boom", code: 2})
	f.exec.reply("slow", execReply{err: status.Error(codes.DeadlineExceeded, "timeout 1s exceeded")})
	f.exec.reply("broken", execReply{err: errors.New("container not found")})
	tests := []struct {
		cmd     string
		want    result
		output  string
		wantErr bool
	}{
		{"ok", success, "fine", false},
		{"bad", failure, "boom", false},
		{"slow", failure, `command "slow" timed out`, false},
		{"broken", unknown, "", true},
	}
	for _, tt := range tests {
		out, err := f.m.handle(context.Background(), execProbe(tt.cmd), nil, "", "containerd://abc", 3*time.Second)
		if (err != nil) != tt.wantErr || out.res != tt.want || out.output != tt.output {
			t.Errorf("%s: got %+v %v, want %v %q (error %v)", tt.cmd, out, err, tt.want, tt.output, tt.wantErr)
		}
	}
	want := execCall{containerID: "abc", cmd: []string{"ok"}, timeout: 3 * time.Second}
	if got := f.exec.calls[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("exec call %+v, want %+v (bare ID, the probe timeout)", got, want)
	}
}

// A failing probe that prints 16 MiB (what the runtime lets a stream reach) reports the first
// 10 KiB, as the kubelet's exec prober reads.
func TestExecProbeOutputIsCapped(t *testing.T) {
	f := newFixture(t)
	f.exec.reply("noisy", execReply{output: strings.Repeat("x", 16<<20), code: 1})
	out, err := f.m.handle(context.Background(), execProbe("noisy"), nil, "", "containerd://abc", time.Second)
	if err != nil || out.res != failure || len(out.output) != 10<<10 {
		t.Fatalf("got %v, %d bytes of output (%v), want a failure with 10 KiB", out.res, len(out.output), err)
	}
}
