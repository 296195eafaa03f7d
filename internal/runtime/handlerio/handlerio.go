// Package handlerio is what probes and lifecycle handlers share when they call into a pod: one
// HTTP client with one redirect policy, the request they send, and how much of a pod's answer
// nodelet keeps. A pod's answers are untrusted input: an exec handler may print megabytes and
// an HTTP handler may redirect anywhere, yet nodelet sends these requests from the host's
// network namespace.
package handlerio

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// MaxOutput is how much of a handler's output nodelet keeps: an exec probe's or hook's stdout
// and stderr together, an HTTP response body. 10 KiB, what the kubelet's probes read.
const MaxOutput = 10 << 10

// ExecOutput is stdout followed by stderr, cut at MaxOutput bytes (the runtime lets each
// stream reach 16 MiB).
func ExecOutput(stdout, stderr []byte) string {
	stdout = stdout[:min(len(stdout), MaxOutput)]
	stderr = stderr[:min(len(stderr), MaxOutput-len(stdout))]
	return string(stdout) + string(stderr)
}

// NewClient returns the client for probes' and lifecycle hooks' GETs: no proxy, no connection
// reuse (each call sees a fresh connection, as the container's clients would), certificates not
// checked (pods serve self-signed ones and no CA would be known), and redirects followed only
// on the same host. It must never carry credentials of nodelet's own.
func NewClient() *http.Client {
	transport := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
		DialContext:        (&net.Dialer{}).DialContext,
	}
	return &http.Client{Transport: transport, CheckRedirect: SameHostRedirects}
}

// SameHostRedirects follows up to 10 redirects that stay on the first request's host; one to
// another host (the node's loopback, a link-local metadata address) ends the call with the
// redirect response itself, as the kubelet does for probes and hooks alike.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// URL builds scheme://host:port/path; path may carry a query string. A path that does not
// parse is passed on as it is: it is too late to refuse it.
func URL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// Scheme is the handler's scheme in lower case, http when unset.
func Scheme(g *v1.HTTPGetAction) string {
	if g.Scheme == "" {
		return "http"
	}
	return strings.ToLower(string(g.Scheme))
}

// NewRequest is the GET of u with the handler's headers (a Host header sets the request's
// host); userAgent and Accept: */* are sent unless the handler sets its own.
func NewRequest(ctx context.Context, u *url.URL, headers []v1.HTTPHeader, userAgent string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range headers {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", userAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	}
	return req, nil
}
