package nodeui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"
)

// Server serves the page on its own plain-HTTP listener (--node-ui-port), with no
// authentication: it is bound to loopback unless told otherwise, and answers only requests
// addressed to itself (hostGuard).
type Server struct {
	addr    string
	names   []string
	handler http.Handler
}

// NewServer serves h (NewHandler's) on addr; "/" leads to the page. names are the node's
// own names and IPs (host name, node name, node IPs) the page answers to besides the
// listener's address.
func NewServer(addr string, h http.Handler, names ...string) *Server {
	mux := http.NewServeMux()
	mux.Handle("/ui", h)
	mux.Handle("/ui/", h)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", "ui/")
		w.WriteHeader(http.StatusFound)
	})
	return &Server{addr: addr, names: names, handler: mux}
}

// Run listens and serves until ctx ends; it fails at once when the address cannot be listened on.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("node page: %w", err)
	}
	return s.serve(ctx, ln)
}

// readHeaderTimeout cuts off a client that never finishes its headers (slowloris); tests
// shorten it.
var readHeaderTimeout = 10 * time.Second

func (s *Server) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler: newHostGuard(ln.Addr(), s.names).wrap(s.handler), ReadHeaderTimeout: readHeaderTimeout, WriteTimeout: time.Minute, IdleTimeout: 90 * time.Second,
	}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		// ctx has ended: the graceful shutdown gets a deadline of its own.
		shut, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shut)
	}()
	klog.InfoS("Serving the node page", "url", "http://"+ln.Addr().String()+"/ui/")
	err := srv.Serve(ln)
	cancel() // a server that failed by itself still shuts down its connections
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
