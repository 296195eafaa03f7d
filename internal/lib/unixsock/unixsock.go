// Package unixsock listens on unix sockets whose path is longer than the kernel's limit for a
// socket address (107 bytes), as under a deep --root-dir: the socket is bound through the
// directory's /proc/self/fd link, whose path is short, so the file still lands at path. It
// also serves a gRPC server on such a socket for as long as a context lasts.
package unixsock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxPath is the longest path a sockaddr_un holds, without its terminating NUL.
const maxPath = len(unix.RawSockaddrUnix{}.Path) - 1

// Listen listens on a unix socket created at path. A listener for a long path does not remove
// the socket file when closed: the caller removes it (the short name it was bound under means
// nothing once the directory's descriptor is closed).
func Listen(path string) (net.Listener, error) {
	if len(path) <= maxPath {
		return net.Listen("unix", path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	defer dir.Close()
	short := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	if len(short) > maxPath {
		return nil, fmt.Errorf("listen on %s: the socket's name is longer than %d bytes", path, maxPath)
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: short, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	lis.SetUnlinkOnClose(false)
	return lis, nil
}
