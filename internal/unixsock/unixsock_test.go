package unixsock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
