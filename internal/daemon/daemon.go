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

// WatchContention returns nil when another process opens path (a kubelet that wants the
// lock) or path is deleted, and when ctx ends; the caller then stops, as upstream does with
// --exit-on-lock-contention.
func WatchContention(ctx context.Context, path string) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	file := os.NewFile(uintptr(fd), "inotify") // pollable: a read returns when ctx closes it
	defer file.Close()
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN|unix.IN_DELETE_SELF); err != nil {
		return fmt.Errorf("watching --lock-file %s: %w", path, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = file.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, unix.SizeofInotifyEvent+unix.NAME_MAX+1)
	if _, err := file.Read(buf); err != nil && ctx.Err() == nil {
		return fmt.Errorf("watching --lock-file %s: %w", path, err)
	}
	if ctx.Err() == nil {
		klog.InfoS("Lock file contention: another process opened it; exiting", "path", path)
	}
	return nil
}

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
