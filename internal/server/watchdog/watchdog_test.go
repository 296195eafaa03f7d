package watchdog

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/server/healthz"
)

// listen is systemd's end of NOTIFY_SOCKET: a datagram socket whose messages arrive on the
// returned channel.
func listen(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return msgs
}

func setTimeout(t *testing.T, d time.Duration, pid int) {
	t.Setenv("WATCHDOG_USEC", strconv.FormatInt(d.Microseconds(), 10))
	t.Setenv("WATCHDOG_PID", strconv.Itoa(pid))
}

func TestPingsAtHalfTheTimeoutWhileHealthy(t *testing.T) {
	msgs := listen(t)
	setTimeout(t, 2200*time.Millisecond, os.Getpid())
	var healthy atomic.Bool
	healthy.Store(true)
	checks := map[string]healthz.Check{"syncloop": func() error {
		if !healthy.Load() {
			return errors.New("sync loop stuck")
		}
		return nil
	}}
	w, err := New(checks)
	if err != nil || w == nil {
		t.Fatalf("New = %v, %v", w, err)
	}
	if w.interval != 1100*time.Millisecond {
		t.Errorf("interval %v, want half of WatchdogSec", w.interval)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()

	start := time.Now()
	for i := 0; i < 2; i++ {
		select {
		case m := <-msgs:
			if m != "WATCHDOG=1" {
				t.Fatalf("sent %q, want WATCHDOG=1", m)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("no ping")
		}
	}
	if took := time.Since(start); took < time.Second || took > 2*time.Second {
		t.Errorf("two pings took %v, want one at once and the next an interval later", took)
	}

	healthy.Store(false)
	time.Sleep(1200 * time.Millisecond) // a round in flight may still ping
	for len(msgs) > 0 {
		<-msgs
	}
	select {
	case m := <-msgs:
		t.Fatalf("sent %q while the health check fails", m)
	case <-time.After(2500 * time.Millisecond):
	}
	healthy.Store(true)
	select {
	case <-msgs:
	case <-time.After(3 * time.Second):
		t.Fatal("no ping once healthy again")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

func TestNoWatchdogWithoutWatchdogSecOrForAnotherProcess(t *testing.T) {
	listen(t)
	t.Setenv("WATCHDOG_USEC", "")
	if w, err := New(nil); w != nil || err != nil {
		t.Errorf("without WATCHDOG_USEC: %v, %v", w, err)
	}
	setTimeout(t, 30*time.Second, os.Getpid()+1)
	if w, err := New(nil); w != nil || err != nil {
		t.Errorf("WATCHDOG_PID of another process: %v, %v", w, err)
	}
}

func TestRefusesABadOrTooShortTimeout(t *testing.T) {
	setTimeout(t, time.Second, os.Getpid())
	if _, err := New(nil); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("WatchdogSec=1s: %v, want refused as too small", err)
	}
	t.Setenv("WATCHDOG_USEC", "soon")
	if _, err := New(nil); err == nil || !strings.Contains(err.Error(), "configure watchdog") {
		t.Errorf("WATCHDOG_USEC=soon: %v", err)
	}
}
