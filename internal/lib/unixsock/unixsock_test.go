package unixsock

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// dial connects to the socket at path the same way Listen binds a long one.
func dial(t *testing.T, path string) net.Conn {
	t.Helper()
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	c, err := net.Dial("unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path)))
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	return c
}

func TestListenOnAPathLongerThanASocketAddress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubelet.sock")
	if len(path) <= maxPath {
		t.Fatalf("path %q is not long enough for the test", path)
	}
	if _, err := net.Listen("unix", path); err == nil {
		t.Fatal("the kernel accepted a long socket path: the test proves nothing here")
	}
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no socket at %s: %v", path, err)
	}
	go func() {
		if c, err := lis.Accept(); err == nil {
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
	c := dial(t, path)
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil || string(buf) != "ok" {
		t.Fatalf("read %q, %v", buf, err)
	}
	c.Close()
	lis.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("closing removed the socket the caller owns: %v", err)
	}
}

func TestListenOnAShortPathRemovesItOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	lis.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket left after close: %v", err)
	}
}

func TestServeGRPCUntilTheContextEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeGRPC(ctx, grpc.NewServer(), lis) }()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial while serving: %v", err)
	}
	c.Close()
	select {
	case err := <-done:
		t.Fatalf("ServeGRPC returned %v before its context ended", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ServeGRPC after the context ended: %v", err)
	}
	if _, err := net.Dial("unix", path); err == nil {
		t.Error("the socket still accepts after ServeGRPC returned")
	}
}

func TestServeGRPCReturnsAServingFailure(t *testing.T) {
	lis, err := Listen(filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	lis.Close()
	if err := ServeGRPC(context.Background(), grpc.NewServer(), lis); err == nil {
		t.Error("ServeGRPC on a closed listener returned nil")
	}
}
