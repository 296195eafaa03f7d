package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// leakOptions are the goroutines a stopped nodelet may leave, each one a library's that
// cannot be stopped from outside.
var leakOptions = []goleak.Option{
	// klog's flush daemon runs for the process's life (klog.StopFlushDaemon is for exit).
	goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
}

// A standalone node that ran a pod leaves no goroutine behind once its context is cancelled
// and Run returned: every component was started through the group and joined.
func TestStandaloneStopLeavesNoGoroutine(t *testing.T) {
	// Checked last (cleanups run in reverse), once the fake runtime's server is stopped too.
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, append(leakOptions, before)...) })
	runAPodAndStop(t, "--healthz-port="+freePort(t), "--healthz-bind-address=127.0.0.1")
}

// runAPodAndStop runs nodelet with extra flags until a static pod runs, then cancels it and
// waits for Run to return.
func runAPodAndStop(t *testing.T, extra ...string) {
	t.Helper()
	cfg, fake, manifests := testConfig(t, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	writePod(t, manifests, "web", "Always")
	eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// freePort is a loopback TCP port nothing listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// A node in cluster mode stops cleanly too, with an API server that answers nothing useful:
// the registration, lease, status, informers and event sink all retry until cancelled.
func TestClusterStopLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, append(leakOptions, before)...) })
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":503}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(api.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	mustWrite(kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, api.URL))
	runAPodAndStop(t, "--kubeconfig="+kubeconfig, "--healthz-port="+freePort(t), "--healthz-bind-address=127.0.0.1", "--port=0")
}
