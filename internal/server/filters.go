package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"k8s.io/klog/v2"
)

// requestRecord collects what the access log prints about one request.
type requestRecord struct {
	user string
}

type recordKey struct{}

// withAccessLog logs every request at V(4) once it is done, and turns a handler panic into a
// 500 (unless the response had already started or the connection was taken over).
func withAccessLog(server string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &requestRecord{}
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), recordKey{}, rec))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler { // net/http aborts a response this way: let it through
					panic(p)
				}
				klog.ErrorS(fmt.Errorf("%v", p), "Panic serving HTTP request", "server", server,
					"method", r.Method, "path", r.URL.Path, "stack", string(debug.Stack()))
				if !sw.wroteHeader && !sw.hijacked {
					http.Error(sw, "Internal Server Error", http.StatusInternalServerError)
				}
			}
			klog.V(4).InfoS("HTTP request", "server", server, "method", r.Method, "uri", r.URL.RequestURI(),
				"user", rec.user, "status", sw.statusCode(), "hijacked", sw.hijacked,
				"remote", r.RemoteAddr, "userAgent", r.UserAgent(), "duration", time.Since(start))
		}()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status code while passing through everything streaming handlers
// need: flushing, hijacking (SPDY and WebSocket upgrades) and http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	hijacked    bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if !w.wroteHeader {
		w.status, w.wroteHeader = http.StatusOK, true
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
		if !w.wroteHeader {
			w.status = http.StatusSwitchingProtocols
		}
	}
	return conn, rw, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// withAuth authenticates and authorizes every request before next sees it: 401 without an
// accepted identity, 403 (naming the user, verb and subresources asked) when no answer allows
// it, 500 when the authorizer could not be asked.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.authn.authenticate(r)
		if err != nil {
			klog.V(2).InfoS("Rejected credentials", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		}
		if u == nil {
			writeText(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		if rec, ok := r.Context().Value(recordKey{}).(*requestRecord); ok {
			rec.user = u.Name
		}
		attrs := requestAttributes(u, r, s.opts.NodeName, s.opts.StreamingVerbFromMethod)
		subresources := make([]string, 0, len(attrs))
		for _, a := range attrs {
			subresources = append(subresources, a.subresource)
			allowed, err := s.authz.authorize(r.Context(), a)
			if err != nil {
				klog.ErrorS(err, "Authorization error", "user", u.Name, "verb", a.verb, "resource", "nodes", "subresource", a.subresource)
				writeText(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)",
					u.Name, a.verb, a.subresource))
				return
			}
			if allowed {
				next.ServeHTTP(w, r)
				return
			}
		}
		klog.V(2).InfoS("Forbidden", "user", u.Name, "verb", attrs[0].verb, "resource", "nodes", "subresources", subresources)
		writeText(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)\n",
			u.Name, attrs[0].verb, subresources))
	})
}

// readOnly refuses every method that could change something.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeText(w, http.StatusMethodNotAllowed, "Method Not Allowed: the read-only port serves GET only\n")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeText writes a plain-text answer.
func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = fmt.Fprint(w, text)
}

// errorsIsClosed reports a listener or server closed on purpose.
func errorsIsClosed(err error) bool {
	return errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed)
}
