// Package healthz serves the kubelet's localhost health endpoint: "ok" while every check passes.
package healthz

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// Check is one named health condition.
type Check func() error

// Handler answers /healthz with "ok", or 500 naming each failing check.
func Handler(checks map[string]Check) http.Handler {
	names := make([]string, 0, len(checks))
	for n := range checks {
		names = append(names, n)
	}
	sort.Strings(names)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var failed []string
		for _, n := range names {
			err := checks[n]()
			metrics.ObserveHealthcheck(n, metrics.HealthzType, err == nil)
			if err != nil {
				failed = append(failed, fmt.Sprintf("[-]%s failed: %v", n, err))
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if len(failed) > 0 {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, strings.Join(failed, "\n"))
			fmt.Fprintln(w, "healthz check failed")
			return
		}
		fmt.Fprint(w, "ok")
	})
}

// Listen opens the healthz port; nodelet fails to start when it cannot.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("healthz: listening on %s: %w (is another kubelet running? set --healthz-port=0 to disable)", addr, err)
	}
	return ln, nil
}

// Timeouts of the healthz server; tests shorten them.
var (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = 90 * time.Second
)

// Serve answers /healthz on ln until ctx ends, then shuts the server down and returns.
func Serve(ctx context.Context, ln net.Listener, checks map[string]Check) error {
	mux := http.NewServeMux()
	mux.Handle("/healthz", Handler(checks))
	// Every timeout is set: a local client that never finishes its headers, or holds an idle
	// keep-alive connection, must not keep a connection and a goroutine forever.
	srv := &http.Server{
		Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: 2 * readHeaderTimeout,
		WriteTimeout: 2 * readHeaderTimeout, IdleTimeout: idleTimeout,
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		// ctx has ended: the graceful shutdown gets a deadline of its own.
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	klog.InfoS("Serving healthz", "address", ln.Addr().String())
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-stopped
		return nil
	}
	// Serving failed by itself: nodelet goes on without healthz, as before.
	klog.ErrorS(err, "Healthz server stopped")
	<-ctx.Done()
	<-stopped
	return nil
}
