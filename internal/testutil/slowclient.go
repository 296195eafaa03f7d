package testutil

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// SlowHeaders plays a slowloris client on conn: it starts a request and then sends one more
// byte of its headers every 100ms, never finishing them. It returns how long the server took
// to close the connection, and fails the test when the server still holds it after limit.
func SlowHeaders(t testing.TB, conn net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n"); err != nil {
		t.Fatalf("starting the request: %v", err)
	}
	closed := make(chan struct{})
	go func() { // the server answers (408 or nothing) and closes: reading ends
		defer close(closed)
		_, _ = io.Copy(io.Discard, conn)
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for {
		select {
		case <-closed:
			return time.Since(start)
		case <-tick.C:
			_, _ = conn.Write([]byte("X")) // a write error is the close, seen by the reader too
		case <-deadline:
			t.Fatalf("the server still held a connection whose headers never ended after %v", limit)
			return 0
		}
	}
}

// SilentConn opens a connection to addr that never sends a byte (a TLS handshake that never
// starts) and returns how long the server took to close it, failing the test after limit.
func SilentConn(t testing.TB, addr string, limit time.Duration) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(limit))
	_, err = io.Copy(io.Discard, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server still held a silent connection after %v", limit)
	}
	return time.Since(start)
}
