package streaming

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/klog/v2"
)

// isUpgrade reports whether r asks to switch protocols (SPDY or WebSocket).
func isUpgrade(r *http.Request) bool { return httpstream.IsUpgradeRequest(r) }

// isWebSocket reports whether r is a WebSocket upgrade.
func isWebSocket(r *http.Request) bool {
	return isUpgrade(r) && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// proxy hands the client's upgrade request to the runtime's streaming server at rawURL and,
// once the runtime switched protocols, copies bytes both ways until either side closes. The
// client's upgrade headers (Upgrade, Connection, X-Stream-Protocol-Version,
// Sec-WebSocket-*) pass through unchanged, so the runtime negotiates the protocol with the
// client itself. A runtime that refuses the upgrade has its response relayed to the client.
func (s *server) proxy(w http.ResponseWriter, r *http.Request, rawURL string) {
	location, err := url.Parse(rawURL)
	if err != nil || !location.IsAbs() || location.Host == "" {
		writeError(w, r, errorf(http.StatusInternalServerError, "runtime returned an unusable streaming URL %q", rawURL))
		return
	}
	out := r.Clone(r.Context())
	// Credentials the client presented to nodelet are none of the runtime's business.
	out.Header.Del("Authorization")
	out.Header.Del("Proxy-Authorization")

	handler := proxy.NewUpgradeAwareHandler(location, s.transport, false, true, errorResponder{})
	handler.UseLocationHost = true
	handler.ServeHTTP(deadlineFreeWriter{w}, out)
}

// errorResponder answers errors met before the connection was hijacked.
type errorResponder struct{}

func (errorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.ErrorS(err, "Proxying a stream to the runtime failed", "path", r.URL.Path)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// deadlineFreeWriter clears the connection's read and write deadlines when the proxy hijacks
// it: the HTTP server's request timeouts must not cut a long exec or port-forward session.
// Idle sessions are ended by the runtime's streaming server.
type deadlineFreeWriter struct {
	http.ResponseWriter
}

func (w deadlineFreeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, rw, nil
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w deadlineFreeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
