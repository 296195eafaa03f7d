package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/nodelet/nodelet/internal/testutil"
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
	runAPodAndStop(t, nil, "--healthz-port="+freePort(t), "--healthz-bind-address=127.0.0.1")
}

// runAPodAndStop runs nodelet with extra flags until a static pod runs and until holds (when
// set), then cancels it and waits for Run to return.
func runAPodAndStop(t *testing.T, until func() bool, extra ...string) {
	t.Helper()
	cfg, fake, manifests := testConfig(t, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	writePod(t, manifests, "web", "Always")
	testutil.Eventually(t, "web running", func() bool { return running(fake, "web") != nil })
	if until != nil {
		testutil.Eventually(t, "the condition to stop", until)
	}
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
	runClusterAndStop(t, nil, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":503}`, http.StatusServiceUnavailable)
	})
}

// Informers whose lists succeed hold their watches open; stopping ends them too.
func TestClusterStopEndsOpenWatches(t *testing.T) {
	listKinds := map[string]string{"pods": "PodList", "services": "ServiceList", "runtimeclasses": "RuntimeClassList"}
	var watching atomic.Int32
	allWatching := func() bool { return watching.Load() == int32(len(listKinds)) }
	runClusterAndStop(t, allWatching, func(w http.ResponseWriter, r *http.Request) {
		kind := listKinds[path.Base(r.URL.Path)]
		switch {
		case r.Method != http.MethodGet || kind == "":
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":503}`, http.StatusServiceUnavailable)
		case r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			watching.Add(1)
			defer watching.Add(-1)
			<-r.Context().Done() // open until the client goes
		default:
			w.Header().Set("Content-Type", "application/json")
			group := strings.TrimPrefix(strings.TrimPrefix(path.Dir(r.URL.Path), "/apis/"), "/api/") // v1, node.k8s.io/v1
			fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"1"},"items":[]}`, kind, group)
		}
	})
}

// runClusterAndStop runs a node in cluster mode against an API server made of handler (until
// a pod runs and until holds) and checks that no goroutine is left once it stopped and the
// server closed.
func runClusterAndStop(t *testing.T, until func() bool, handler http.HandlerFunc) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, append(leakOptions, before)...) })
	api := httptest.NewServer(handler)
	t.Cleanup(api.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	mustWrite(kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, api.URL))
	runAPodAndStop(t, until, "--kubeconfig="+kubeconfig, "--healthz-port="+freePort(t), "--healthz-bind-address=127.0.0.1", "--port=0")
}
