// Package daemon holds what nodelet does as a host daemon next to its kubelet work: the
// --lock-file that keeps two kubelets off one node (and --exit-on-lock-contention, which lets
// a newer one take over), and systemd's readiness notification.
package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// AcquireLock takes an exclusive flock on path, waiting while another process holds it (as
// upstream). The lock lasts as long as the process.
func AcquireLock(path string) error {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("opening --lock-file %s: %w", path, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err == unix.EWOULDBLOCK {
		klog.InfoS("Waiting for the lock file; another kubelet holds it", "path", path)
		err = unix.Flock(fd, unix.LOCK_EX)
	}
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("locking --lock-file %s: %w", path, err)
	}
	klog.InfoS("Holding the lock file", "path", path)
	return nil // fd stays open: closing it would drop the lock
}

// ContentionWatch notices another process opening the lock file (a kubelet that wants the
// lock) or its deletion, as upstream's --exit-on-lock-contention does.
type ContentionWatch struct {
	path string
	file *os.File // the inotify instance, pollable: a read returns when Run's ctx ends
}

// WatchContention sets the watch on path up at once, so an open while nodelet is still
// starting counts; Run then waits for one.
func WatchContention(path string) (*ContentionWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	file := os.NewFile(uintptr(fd), "inotify")
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN|unix.IN_DELETE_SELF); err != nil {
		file.Close()
		return nil, fmt.Errorf("watching --lock-file %s: %w", path, err)
	}
	return &ContentionWatch{path: path, file: file}, nil
}

// Run returns nil when another process opened the file (also before Run) or it was deleted,
// and when ctx ends; the caller then stops. It releases the watch.
func (w *ContentionWatch) Run(ctx context.Context) error {
	defer w.Close()
	stop := context.AfterFunc(ctx, func() { _ = w.file.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, unix.SizeofInotifyEvent+unix.NAME_MAX+1)
	if _, err := w.file.Read(buf); err != nil && ctx.Err() == nil {
		return fmt.Errorf("watching --lock-file %s: %w", w.path, err)
	}
	if ctx.Err() == nil {
		klog.InfoS("Lock file contention: another process opened it; exiting", "path", w.path)
	}
	return nil
}

// Close releases a watch that is not run (or already ran).
func (w *ContentionWatch) Close() { _ = w.file.Close() }

// NotifyReady tells systemd (Type=notify units) that nodelet is up, when NOTIFY_SOCKET names
// a socket; without it there is nothing to do.
func NotifyReady() {
	socket := os.Getenv("NOTIFY_SOCKET")
	if socket == "" {
		return
	}
	if socket[0] == '@' {
		socket = "\x00" + socket[1:] // abstract namespace
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		klog.ErrorS(err, "Cannot notify systemd of readiness", "socket", os.Getenv("NOTIFY_SOCKET"))
		return
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("READY=1")); err != nil {
		klog.ErrorS(err, "Cannot notify systemd of readiness", "socket", os.Getenv("NOTIFY_SOCKET"))
	}
}
