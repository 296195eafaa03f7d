package daemon

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubelet.lock")
	if err := AcquireLock(path); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != unix.EWOULDBLOCK {
		t.Errorf("a second lock: %v, want EWOULDBLOCK", err)
	}
}

func TestContentionIsAnotherOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubelet.lock")
	if err := AcquireLock(path); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	w := mustWatch(t, path)
	go func() { done <- w.Run(context.Background()) }()
	time.Sleep(50 * time.Millisecond) // Run is waiting
	select {
	case err := <-done:
		t.Fatalf("returned before any contention: %v", err)
	default:
	}
	f, err := os.Open(path) // what a second kubelet does first
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("contention not noticed")
	}

	// An open before Run (nodelet still starting) counts too.
	w = mustWatch(t, path)
	if f, err = os.Open(path); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := w.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Stopping nodelet ends the watch too.
	ctx, cancel := context.WithCancel(context.Background())
	w = mustWatch(t, path)
	go func() { done <- w.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch outlived its context")
	}
}

func mustWatch(t *testing.T, path string) *ContentionWatch {
	t.Helper()
	w, err := WatchContention(path)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNotifyReadyWritesToTheSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	NotifyReady()
	buf := make([]byte, 64)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Errorf("got %q, %v; want READY=1", buf[:n], err)
	}
}
