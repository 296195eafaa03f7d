package nodeui

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// hostGuard lets through only requests addressed to the listener itself. The page has no
// authentication, so without it any web site the operator visits could read it through DNS
// rebinding: the site's name, re-resolved to this node, is same-origin to the browser, but
// its Host header still carries the site's name, which is not one of ours.
//
// Ours are: the bound IP; every address of the machine when bound to all of them; the
// node's names and IPs (host name, --hostname-override, --node-ip), with the listener's
// port. Loopback names (localhost, 127.0.0.0/8, ::1) are accepted with any port: only a
// program on the same machine can use them, e.g. an SSH or kubectl tunnel to the page.
type hostGuard struct {
	port  int
	names map[string]bool // lower-case names and canonical IPs
	// anyLocalIP: bound to all addresses, so any IP of the machine is ours (read on use:
	// addresses come and go).
	anyLocalIP     bool
	interfaceAddrs func() ([]net.Addr, error)
}

func newHostGuard(addr net.Addr, names []string) *hostGuard {
	g := &hostGuard{names: map[string]bool{}, interfaceAddrs: net.InterfaceAddrs}
	if tcp, ok := addr.(*net.TCPAddr); ok {
		g.port = tcp.Port
		if tcp.IP == nil || tcp.IP.IsUnspecified() {
			g.anyLocalIP = true
		} else {
			g.names[tcp.IP.String()] = true
		}
	}
	for _, n := range names {
		if n = canonicalHost(n); n != "" {
			g.names[n] = true
		}
	}
	return g
}

// canonicalHost is a host name lower-cased without a trailing dot, or an IP in its
// canonical form (brackets gone).
func canonicalHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(h, "]"), "["), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return strings.ToLower(h)
}

// allowed reports whether a Host header names this listener.
func (g *hostGuard) allowed(hostHeader string) bool {
	host, portText, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host, portText = hostHeader, "80" // no port: the scheme's default
	}
	host = canonicalHost(host)
	if host == "" {
		return false
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return true
	}
	if port, err := strconv.Atoi(portText); err != nil || port != g.port {
		return false
	}
	if g.names[host] {
		return true
	}
	return ip != nil && g.anyLocalIP && g.isLocalIP(ip)
}

func (g *hostGuard) isLocalIP(ip net.IP) bool {
	addrs, err := g.interfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// sameOrigin reports whether a state-changing request comes from the page itself: no
// Origin (not a browser's cross-site request) or one whose host is the request's Host.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && strings.EqualFold(u.Host, r.Host)
}

// wrap refuses requests for other hosts (421) and, for anything but GET and HEAD, requests
// from another origin (403), each with a body saying why and what to do.
func (g *hostGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.allowed(r.Host) {
			refuse(w, http.StatusMisdirectedRequest, fmt.Sprintf(
				"The node page answers only to this node's own addresses and names, not to Host %q: open it at the address nodelet logs as \"Serving the node page\" (or through an SSH tunnel to it). This check stops other web sites from reading the page through DNS rebinding.\n", r.Host))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
			refuse(w, http.StatusForbidden, fmt.Sprintf(
				"Cross-origin %s refused: Origin %q is not this page (%s). Changes are accepted only from the node page itself.\n", r.Method, r.Header.Get("Origin"), r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}
