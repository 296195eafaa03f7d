package nodeui

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHostGuardOnLoopback(t *testing.T) {
	g := newHostGuard(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4194}, []string{"Node-A", "node-a.example.com."})
	for host, want := range map[string]bool{
		"127.0.0.1:4194":              true,
		"localhost:4194":              true,
		"LOCALHOST:4194":              true,
		"[::1]:4194":                  true,
		"127.0.0.1:8080":              true, // a tunnel's local port
		"localhost":                   true,
		"node-a:4194":                 true,
		"NODE-A.example.com:4194":     true,
		"node-a.example.com.:4194":    true,
		"node-a:4195":                 false, // another port of that name is not this listener
		"node-a":                      false, // port 80
		"evil.example:4194":           false, // DNS rebinding: the attacker's name, our address
		"evil.example":                false,
		"127.0.0.1.evil.example:4194": false,
		"localhost.evil.example:4194": false,
		"10.0.0.9:4194":               false,
		"":                            false,
		"[]:4194":                     false,
	} {
		if got := g.allowed(host); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
}

func TestHostGuardOnAnAddress(t *testing.T) {
	g := newHostGuard(&net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 4194}, []string{"node-a", "192.0.2.10", "2001:db8::10"})
	g.interfaceAddrs = func() ([]net.Addr, error) {
		t.Error("interface addresses read for a listener bound to one address")
		return nil, nil
	}
	for host, want := range map[string]bool{
		"192.0.2.10:4194":     true,
		"[2001:db8::10]:4194": true,
		"node-a:4194":         true,
		"192.0.2.11:4194":     false,
		"192.0.2.10:80":       false,
		"evil.example:4194":   false,
	} {
		if got := g.allowed(host); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
}

func TestHostGuardOnAllAddresses(t *testing.T) {
	g := newHostGuard(&net.TCPAddr{IP: net.IPv4zero, Port: 80}, []string{"node-a"})
	local := []net.Addr{&net.IPNet{IP: net.ParseIP("192.0.2.10"), Mask: net.CIDRMask(24, 32)}, &net.IPNet{IP: net.ParseIP("2001:db8::10"), Mask: net.CIDRMask(64, 128)}}
	g.interfaceAddrs = func() ([]net.Addr, error) { return local, nil }
	for host, want := range map[string]bool{
		"192.0.2.10":      true, // port 80 implied
		"192.0.2.10:80":   true,
		"[2001:db8::10]":  true,
		"node-a":          true,
		"192.0.2.99":      false,
		"192.0.2.10:8080": false,
		"evil.example":    false,
	} {
		if got := g.allowed(host); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
	g.interfaceAddrs = func() ([]net.Addr, error) { return nil, errors.New("no netlink") }
	if g.allowed("192.0.2.10") {
		t.Error("an address was accepted although the machine's addresses could not be read")
	}
}

func TestHostGuardRefusesWithAReason(t *testing.T) {
	reached := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ })
	h := newHostGuard(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4194}, nil).wrap(next)
	serve := func(method, host, origin string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://"+host+"/ui/api/pods", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	w := serve("GET", "evil.example:4194", "")
	body, _ := io.ReadAll(w.Body)
	if w.Code != http.StatusMisdirectedRequest || !strings.Contains(string(body), `Host "evil.example:4194"`) ||
		!strings.Contains(string(body), "DNS rebinding") || reached != 0 {
		t.Errorf("foreign Host: %d %q (handler reached %d times), want 421 naming the Host", w.Code, body, reached)
	}
	if w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("refusal content type %q", w.Header().Get("Content-Type"))
	}

	// Reads from any origin: the browser's own same-origin policy keeps other sites out.
	for _, origin := range []string{"", "http://evil.example"} {
		if w := serve("GET", "127.0.0.1:4194", origin); w.Code != http.StatusOK {
			t.Errorf("GET with Origin %q: %d", origin, w.Code)
		}
	}
	// Changes only from the page itself, or from a client that is not a browser.
	for origin, want := range map[string]int{
		"":                         http.StatusOK,
		"http://127.0.0.1:4194":    http.StatusOK,
		"http://evil.example:4194": http.StatusForbidden,
		"http://127.0.0.1:4195":    http.StatusForbidden,
		"https://127.0.0.1:4194":   http.StatusForbidden,
		"null":                     http.StatusForbidden,
	} {
		if w := serve("POST", "127.0.0.1:4194", origin); w.Code != want {
			t.Errorf("POST with Origin %q: %d, want %d", origin, w.Code, want)
		}
	}
	if w := serve("DELETE", "127.0.0.1:4194", "http://evil.example"); !strings.Contains(w.Body.String(), "Cross-origin DELETE refused") {
		t.Errorf("cross-origin DELETE: %d %q", w.Code, w.Body.String())
	}
}
