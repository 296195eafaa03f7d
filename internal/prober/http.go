package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// maxBody is how much of a response body a probe reads (and reports).
const maxBody = 10 << 10

// newHTTPClient returns the client HTTP probes share: no proxy, no connection reuse (each
// probe sees a fresh connection, as the container's clients would), certificates not checked,
// redirects followed only on the same host.
func newHTTPClient() *http.Client {
	transport := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
		DialContext:        (&net.Dialer{}).DialContext,
	}
	return &http.Client{Transport: transport, CheckRedirect: sameHostRedirects}
}

// sameHostRedirects follows up to 10 redirects that stay on the probed host; one to another
// host ends the probe with the redirect response itself.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// httpProbe GETs the handler's URL: 2xx passes, a 3xx that was not followed passes with a
// warning, anything else (or no answer in time) fails.
func (m *Manager) httpProbe(ctx context.Context, g *v1.HTTPGetAction, host string, port int) (outcome, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u := probeURL(scheme, host, port, g.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return outcome{}, err
	}
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", UserAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return outcome{res: failure, output: err.Error()}, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return outcome{res: failure, output: err.Error()}, nil
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return outcome{res: success, output: string(body)}, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return outcome{res: success, warning: true, output: "Probe terminated redirects, Response body: " + string(body)}, nil
	}
	return outcome{res: failure, output: fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)}, nil
}

// probeURL builds scheme://host:port/path; path may carry a query string.
func probeURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}
