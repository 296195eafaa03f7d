package nodeui

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

func TestServerServesThePageAndStopsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ln.Addr().String(), testHandler(t, testNode()))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	// The root leads to the page: a relative redirect, followed by the client.
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/" || !strings.Contains(string(body), "static/app.js") {
		t.Errorf("GET / ended at %s with %d", resp.Request.URL.Path, resp.StatusCode)
	}
	resp, err = http.Get(base + "/ui/api/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("api/pods: %d", resp.StatusCode)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the page's port: %d, want 404 (only the page is served)", resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
}

func TestServerRunFailsOnABusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = NewServer(ln.Addr().String(), http.NotFoundHandler()).Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "node page") {
		t.Errorf("Run on a busy address: %v, want an error naming the node page", err)
	}
}

// The listener itself checks the Host: a rebinding page's name is refused, ours is served.
func TestServerRefusesAForeignHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ln.Addr().String(), testHandler(t, testNode()), "node-a")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	port := ln.Addr().(*net.TCPAddr).Port
	get := func(host string) int {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/ui/api/pods", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for host, want := range map[string]int{
		"evil.example:" + strconv.Itoa(port): http.StatusMisdirectedRequest,
		"node-a:" + strconv.Itoa(port):       http.StatusOK,
		ln.Addr().String():                   http.StatusOK,
	} {
		if got := get(host); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}

// A client that never finishes its headers is cut off after readHeaderTimeout.
func TestServerCutsOffSlowHeaders(t *testing.T) {
	defer func(d time.Duration) { readHeaderTimeout = d }(readHeaderTimeout)
	readHeaderTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ln.Addr().String(), testHandler(t, testNode()))
	testutil.Start(t, func(ctx context.Context) error { return srv.serve(ctx, ln) })
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	testutil.SlowHeaders(t, conn, 5*time.Second)
}
