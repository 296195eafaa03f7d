package app

import (
	"context"
	"net"
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
	cfg, fake, manifests := testConfig(t, "--healthz-port="+freePort(t), "--healthz-bind-address=127.0.0.1")
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
