package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/server/healthz"
)

func TestSelfSignedCertificateCreatedOnceAndReused(t *testing.T) {
	opts := webhookOptions(t, nil, (&fakeReviews{}).client())
	opts.HostIPs = []net.IP{net.ParseIP("10.1.2.3")}
	opts.Hostnames = []string{"host-a.example"}
	_, srv := start(t, opts, Handlers{})

	certFile := filepath.Join(opts.CertDir, "kubelet.crt")
	first, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatalf("self-signed cert not written: %v", err)
	}
	if info, err := os.Stat(filepath.Join(opts.CertDir, "kubelet.key")); err != nil || info.Mode().Perm()&0o077 != 0 {
		t.Errorf("key file: %v, mode %v; want private", err, info.Mode())
	}

	// The client verifies the served chain against the written file, at 127.0.0.1.
	conn, err := tls.Dial("tcp", strings.TrimPrefix(srv.secureURL, "https://"), &tls.Config{RootCAs: srv.servingCAs})
	if err != nil {
		t.Fatalf("TLS handshake verifying the self-signed cert: %v", err)
	}
	state := conn.ConnectionState()
	_ = conn.Close()
	leaf := state.PeerCertificates[0]
	if !strings.HasPrefix(leaf.Subject.CommonName, "node-a@") {
		t.Errorf("CN = %q, want node-a@<timestamp>", leaf.Subject.CommonName)
	}
	for _, dns := range []string{"node-a", "localhost", "host-a.example"} {
		if !slices.Contains(leaf.DNSNames, dns) {
			t.Errorf("DNS SANs %v lack %s", leaf.DNSNames, dns)
		}
	}
	for _, ip := range []string{"127.0.0.1", "10.1.2.3"} {
		if !slices.ContainsFunc(leaf.IPAddresses, func(a net.IP) bool { return a.String() == ip }) {
			t.Errorf("IP SANs %v lack %s", leaf.IPAddresses, ip)
		}
	}
	if state.Version < tls.VersionTLS12 {
		t.Errorf("negotiated TLS version %x, want 1.2+", state.Version)
	}
	if _, err := tls.Dial("tcp", strings.TrimPrefix(srv.secureURL, "https://"),
		&tls.Config{RootCAs: srv.servingCAs, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Errorf("a TLS 1.1 handshake succeeded")
	}

	if _, err := New(opts, Handlers{}); err != nil {
		t.Fatalf("second New: %v", err)
	}
	second, _ := os.ReadFile(certFile)
	if string(first) != string(second) {
		t.Errorf("a restart replaced the self-signed certificate")
	}
}

func TestConfiguredCertificatePairIsServed(t *testing.T) {
	// Use a pair made by the self-signed path in another directory as "given" files.
	dir := t.TempDir()
	if _, _, err := ensureSelfSignedCert(&Options{CertDir: dir, NodeName: "given"}); err != nil {
		t.Fatal(err)
	}
	opts := webhookOptions(t, nil, (&fakeReviews{}).client())
	opts.TLSCertFile, opts.TLSKeyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	s, err := New(opts, Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(s.tls.Certificates[0].Certificate[0])
	if !strings.HasPrefix(leaf.Subject.CommonName, "given@") {
		t.Errorf("served CN %q, want the configured pair's", leaf.Subject.CommonName)
	}
	if entries, _ := os.ReadDir(opts.CertDir); len(entries) != 0 {
		t.Errorf("cert dir written although a pair was configured: %v", entries)
	}
}

func TestPodsAndConfigz(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Status:     v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.85.0.9"},
	}
	kc := &kubeletconfigv1beta1.KubeletConfiguration{MaxPods: 42, Address: "0.0.0.0", Port: 10250,
		StaticPodURL: "https://manifests.example/", StaticPodURLHeader: map[string][]string{"Authorization": {"Bearer manifest-secret"}}}
	opts := webhookOptions(t, nil, nil)
	opts.Client = nil
	opts.Authentication.Webhook.Enabled = ptr.To(false)
	opts.Authentication.Anonymous.Enabled = ptr.To(true)
	opts.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
	opts.Pods = func() []*v1.Pod { return []*v1.Pod{pod} }
	opts.Config = kc
	_, srv := start(t, opts, Handlers{})
	c := srv.client()

	got := do(t, c, "GET", srv.secureURL+"/pods", "")
	var list v1.PodList
	if err := json.Unmarshal([]byte(got.body), &list); err != nil || got.code != http.StatusOK {
		t.Fatalf("/pods: %d %v %q", got.code, err, got.body)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 ||
		list.Items[0].UID != "uid-1" || list.Items[0].Status.PodIP != "10.85.0.9" {
		t.Errorf("/pods = %+v", list)
	}
	if got := do(t, c, "POST", srv.secureURL+"/pods", ""); got.code != http.StatusMethodNotAllowed {
		t.Errorf("POST /pods: got %d, want 405", got.code)
	}

	got = do(t, c, "GET", srv.secureURL+"/configz", "")
	if got.hdr.Get("Content-Type") != "application/json" {
		t.Errorf("/configz content type %q", got.hdr.Get("Content-Type"))
	}
	var wrapped struct {
		KubeletConfig kubeletconfigv1beta1.KubeletConfiguration `json:"kubeletconfig"`
	}
	if err := json.Unmarshal([]byte(got.body), &wrapped); err != nil {
		t.Fatalf("/configz: %v %q", err, got.body)
	}
	cfg := wrapped.KubeletConfig
	if cfg.Kind != "KubeletConfiguration" || cfg.APIVersion != "kubelet.config.k8s.io/v1beta1" || cfg.MaxPods != 42 {
		t.Errorf("/configz kubeletconfig = kind %q apiVersion %q maxPods %d", cfg.Kind, cfg.APIVersion, cfg.MaxPods)
	}
	if kc.Kind != "" || kc.StaticPodURLHeader["Authorization"][0] != "Bearer manifest-secret" {
		t.Errorf("/configz modified the caller's configuration")
	}
	// The manifest server's credentials are not shown; the header's name is.
	if strings.Contains(got.body, "manifest-secret") {
		t.Errorf("/configz shows staticPodURLHeader's value: %s", got.body)
	}
	if h := cfg.StaticPodURLHeader["Authorization"]; len(h) != 1 || h[0] != "<masked>" {
		t.Errorf("/configz staticPodURLHeader = %v, want Authorization: [<masked>]", cfg.StaticPodURLHeader)
	}
}

func TestHealthz(t *testing.T) {
	var syncErr atomic.Pointer[error]
	opts := alwaysAllowOptions(t)
	syncloop := func() error {
		if e := syncErr.Load(); e != nil {
			return *e
		}
		return nil
	}
	opts.HealthChecks = map[string]healthz.Check{"syncloop": syncloop, "pleg": func() error { return nil }}
	_, srv := start(t, opts, Handlers{})
	c := srv.client()
	if got := do(t, c, "GET", srv.secureURL+"/healthz", ""); got.code != 200 || got.body != "ok" {
		t.Errorf("/healthz healthy: %d %q", got.code, got.body)
	}
	stalled := errors.New("sync loop stalled for 5m")
	syncErr.Store(&stalled)
	got := do(t, c, "GET", srv.secureURL+"/healthz", "")
	want := "[+]ping ok\n[+]pleg ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n"
	if got.code != http.StatusInternalServerError || got.body != want {
		t.Errorf("/healthz unhealthy: %d %q, want 500 %q", got.code, got.body, want)
	}
	if got := do(t, c, "GET", srv.secureURL+"/healthz/pleg", ""); got.code != 200 {
		t.Errorf("/healthz/pleg: %d", got.code)
	}
	if got := do(t, c, "GET", srv.secureURL+"/healthz/syncloop", ""); got.code != 500 || !strings.Contains(got.body, "stalled") {
		t.Errorf("/healthz/syncloop: %d %q", got.code, got.body)
	}
	if got := do(t, c, "GET", srv.secureURL+"/healthz?exclude=syncloop", ""); got.code != 200 {
		t.Errorf("/healthz?exclude=syncloop: %d %q", got.code, got.body)
	}
}

// alwaysAllowOptions is a standalone setup: anonymous, AlwaysAllow, no API client.
func alwaysAllowOptions(t *testing.T) Options {
	opts := webhookOptions(t, nil, nil)
	opts.Client = nil
	opts.Authentication.Webhook.Enabled = ptr.To(false)
	opts.Authentication.Anonymous.Enabled = ptr.To(true)
	opts.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
	return opts
}

func TestHandlersGetPathValues(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	record := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s %s ns=%s pod=%s uid=%s ctr=%s", name, r.Method,
				r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid"), r.PathValue("container")))
		})
	}
	h := Handlers{
		ContainerLogs: record("logs"), Exec: record("exec"), Attach: record("attach"), PortForward: record("pf"),
		Run: record("run"), NodeLogs: record("nodelogs"), StatsSummary: record("stats"), Metrics: record("metrics"),
		MetricsResource: record("resource"), MetricsProbes: record("probes"), MetricsCadvisor: record("cadvisor"),
		MetricsSLIs: record("slis"), Checkpoint: record("checkpoint"),
	}
	_, srv := start(t, alwaysAllowOptions(t), h)
	c := srv.client()
	requests := []struct{ method, path, want string }{
		{"GET", "/containerLogs/ns1/p1/c1", "logs GET ns=ns1 pod=p1 uid= ctr=c1"},
		{"POST", "/exec/ns1/p1/c1", "exec POST ns=ns1 pod=p1 uid= ctr=c1"},
		{"GET", "/exec/ns1/p1/u1/c1", "exec GET ns=ns1 pod=p1 uid=u1 ctr=c1"},
		{"POST", "/attach/ns1/p1/u1/c1", "attach POST ns=ns1 pod=p1 uid=u1 ctr=c1"},
		{"POST", "/portForward/ns1/p1", "pf POST ns=ns1 pod=p1 uid= ctr="},
		{"GET", "/portForward/ns1/p1/u1", "pf GET ns=ns1 pod=p1 uid=u1 ctr="},
		{"POST", "/run/ns1/p1/c1", "run POST ns=ns1 pod=p1 uid= ctr=c1"},
		{"GET", "/logs/syslog", "nodelogs GET ns= pod= uid= ctr="},
		{"POST", "/stats/summary", "stats POST ns= pod= uid= ctr="},
		{"GET", "/metrics", "metrics GET ns= pod= uid= ctr="},
		{"GET", "/metrics/resource", "resource GET ns= pod= uid= ctr="},
		{"GET", "/metrics/probes", "probes GET ns= pod= uid= ctr="},
		{"GET", "/metrics/cadvisor", "cadvisor GET ns= pod= uid= ctr="},
		{"GET", "/metrics/slis", "slis GET ns= pod= uid= ctr="},
		{"POST", "/checkpoint/ns1/p1/c1", "checkpoint POST ns=ns1 pod=p1 uid= ctr=c1"},
	}
	for _, r := range requests {
		mu.Lock()
		seen = nil
		mu.Unlock()
		got := do(t, c, r.method, srv.secureURL+r.path, "")
		mu.Lock()
		if got.code != http.StatusOK || len(seen) != 1 || seen[0] != r.want {
			t.Errorf("%s %s: %d, handler saw %q, want %q", r.method, r.path, got.code, seen, r.want)
		}
		mu.Unlock()
	}
	for _, r := range []struct{ method, path string }{{"GET", "/checkpoint/ns/p/c"}, {"GET", "/run/ns/p/c"}, {"POST", "/containerLogs/ns/p/c"}, {"DELETE", "/exec/ns/p/c"}} {
		if got := do(t, c, r.method, srv.secureURL+r.path, ""); got.code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: got %d, want 405", r.method, r.path, got.code)
		}
	}
	if got := do(t, c, "GET", srv.secureURL+"/spec/", ""); got.code != http.StatusNotFound {
		t.Errorf("/spec/: got %d, want 404", got.code)
	}
}

func TestNilHandlersAreNotServed(t *testing.T) {
	_, srv := start(t, alwaysAllowOptions(t), Handlers{})
	for _, p := range []string{"/exec/ns/p/c", "/containerLogs/ns/p/c", "/stats/summary", "/metrics", "/runningpods/"} {
		if got := do(t, srv.client(), "GET", srv.secureURL+p, ""); got.code != http.StatusNotFound {
			t.Errorf("GET %s without a handler: %d, want 404", p, got.code)
		}
	}
}

func TestDebuggingHandlersDisabled(t *testing.T) {
	opts := alwaysAllowOptions(t)
	opts.EnableDebuggingHandlers = false
	opts.RunningPods = func(context.Context) ([]*v1.Pod, error) { return nil, nil }
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	_, srv := start(t, opts, Handlers{Exec: ok, ContainerLogs: ok, NodeLogs: ok, PortForward: ok, Attach: ok, Run: ok})
	for _, r := range []struct{ method, path string }{
		{"POST", "/exec/ns/p/c"}, {"GET", "/containerLogs/ns/p/c"}, {"GET", "/logs/syslog"}, {"POST", "/attach/ns/p/c"},
		{"POST", "/portForward/ns/p"}, {"POST", "/run/ns/p/c"}, {"GET", "/runningpods/"}, {"GET", "/debug/pprof/"},
	} {
		got := do(t, srv.client(), r.method, srv.secureURL+r.path, "")
		if got.code != http.StatusMethodNotAllowed || got.body != "Debug endpoints are disabled.\n" {
			t.Errorf("%s %s with debugging off: %d %q, want 405", r.method, r.path, got.code, got.body)
		}
	}
	if got := do(t, srv.client(), "GET", srv.secureURL+"/configz", ""); got.code != http.StatusNotFound {
		t.Errorf("/configz with debugging off: %d, want 404 (upstream serves it with the debugging handlers)", got.code)
	}
}

func TestRunningPods(t *testing.T) {
	opts := alwaysAllowOptions(t)
	opts.RunningPods = func(ctx context.Context) ([]*v1.Pod, error) {
		return []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}}}}, nil
	}
	_, srv := start(t, opts, Handlers{})
	for _, p := range []string{"/runningpods/", "/runningpods"} {
		got := do(t, srv.client(), "GET", srv.secureURL+p, "")
		var list v1.PodList
		if err := json.Unmarshal([]byte(got.body), &list); err != nil || len(list.Items) != 1 || list.Items[0].Spec.Containers[0].Name != "c" {
			t.Errorf("GET %s: %d %q", p, got.code, got.body)
		}
	}
}

func TestReadOnlyPort(t *testing.T) {
	reviews := &fakeReviews{}
	opts := webhookOptions(t, nil, reviews.client())
	opts.ReadOnlyPort = 1 // any positive value turns it on; the test listens on a free port
	opts.Pods = func() []*v1.Pod { return []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p"}}} }
	stats := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "{}") })
	exec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	_, srv := start(t, opts, Handlers{StatsSummary: stats, Metrics: stats, Exec: exec})
	c := http.DefaultClient
	for _, p := range []string{"/healthz", "/pods", "/stats/summary", "/metrics"} {
		if got := do(t, c, "GET", srv.readOnlyURL+p, ""); got.code != http.StatusOK {
			t.Errorf("read-only GET %s: %d %q", p, got.code, got.body)
		}
	}
	if _, sars := reviews.counts(); sars != 0 {
		t.Errorf("the read-only port asked the authorizer (%d SARs)", sars)
	}
	for _, r := range []struct{ method, path string }{{"POST", "/pods"}, {"POST", "/stats/summary"}, {"PUT", "/healthz"}, {"POST", "/exec/ns/p/c"}} {
		if got := do(t, c, r.method, srv.readOnlyURL+r.path, ""); got.code != http.StatusMethodNotAllowed {
			t.Errorf("read-only %s %s: %d, want 405", r.method, r.path, got.code)
		}
	}
	if got := do(t, c, "GET", srv.readOnlyURL+"/exec/ns/p/c", ""); got.code != http.StatusMethodNotAllowed || !strings.Contains(got.body, "Debug endpoints are disabled") {
		t.Errorf("read-only GET /exec: %d %q, want 405", got.code, got.body)
	}
	if got := do(t, c, "GET", srv.readOnlyURL+"/configz", ""); got.code != http.StatusNotFound {
		t.Errorf("read-only /configz: %d, want 404", got.code)
	}
	// The secure port still demands credentials.
	if got := do(t, srv.client(), "GET", srv.secureURL+"/pods", ""); got.code != http.StatusUnauthorized {
		t.Errorf("secure /pods without credentials: %d, want 401", got.code)
	}
}

func TestPanicBecomes500(t *testing.T) {
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	_, srv := start(t, alwaysAllowOptions(t), Handlers{Metrics: boom})
	if got := do(t, srv.client(), "GET", srv.secureURL+"/metrics", ""); got.code != http.StatusInternalServerError {
		t.Errorf("panicking handler: %d, want 500", got.code)
	}
	if got := do(t, srv.client(), "GET", srv.secureURL+"/healthz", ""); got.code != http.StatusOK {
		t.Errorf("server after a panic: %d", got.code)
	}
}

func TestRunReportsListenErrorsAndStopsWithContext(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	opts := alwaysAllowOptions(t)
	opts.Address = "127.0.0.1"
	opts.Port = int32(busy.Addr().(*net.TCPAddr).Port)
	s, err := New(opts, Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "listening") {
		t.Errorf("Run on a busy port: %v, want a listen error", err)
	}

	opts.Port = 0
	s, err = New(opts, Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after ctx end: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}
