// Package logind is the part of systemd-logind's D-Bus API that graceful node shutdown needs, as
// the upstream kubelet uses it: a "delay" inhibitor lock on shutdown, logind's
// InhibitDelayMaxUSec (raised through a drop-in when the shutdown needs longer), and the
// PrepareForShutdown signal. The system bus is the one DBUS_SYSTEM_BUS_ADDRESS names, else
// /var/run/dbus/system_bus_socket.
package logind

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
)

const (
	loginService   = "org.freedesktop.login1"
	loginPath      = dbus.ObjectPath("/org/freedesktop/login1")
	loginManager   = "org.freedesktop.login1.Manager"
	systemdService = "org.freedesktop.systemd1"
	systemdPath    = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdManager = "org.freedesktop.systemd1.Manager"

	// DropInDir and DropInFile are where the delay override goes, where upstream writes it.
	DropInDir  = "/etc/systemd/logind.conf.d"
	DropInFile = "99-kubelet.conf"
)

// ErrNoLogind means the system bus is not there or nothing on it answers as logind.
var ErrNoLogind = errors.New("no systemd-logind on the system bus")

// Conn is a connection to logind on the system bus.
type Conn struct {
	bus  *dbus.Conn
	done chan struct{}
	once sync.Once
}

// Connect opens the system bus and checks that logind is on it.
func Connect() (*Conn, error) {
	bus, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoLogind, err)
	}
	var owned bool
	if err := bus.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, loginService).Store(&owned); err != nil || !owned {
		bus.Close()
		if err == nil {
			err = fmt.Errorf("%s has no owner", loginService)
		}
		return nil, fmt.Errorf("%w: %v", ErrNoLogind, err)
	}
	return &Conn{bus: bus, done: make(chan struct{})}, nil
}

// Close ends the connection; the channel from WatchShutdown closes.
func (c *Conn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.bus.Close()
}

// InhibitDelay is logind's InhibitDelayMaxUSec: how long a delay lock may hold a shutdown back.
func (c *Conn) InhibitDelay() (time.Duration, error) {
	v, err := c.bus.Object(loginService, loginPath).GetProperty(loginManager + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("reading logind's InhibitDelayMaxUSec: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("logind's InhibitDelayMaxUSec is %s, not a uint64", v.Signature())
	}
	if usec > math.MaxInt64/1000 {
		return time.Duration(math.MaxInt64), nil // "infinity"
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// InhibitShutdown takes a delay lock on shutdown; closing it releases the lock.
func (c *Conn) InhibitShutdown(who, why string) (io.Closer, error) {
	var fd dbus.UnixFD
	if err := c.bus.Object(loginService, loginPath).Call(loginManager+".Inhibit", 0, "shutdown", who, why, "delay").Store(&fd); err != nil {
		return nil, fmt.Errorf("taking logind's shutdown inhibitor lock: %w", err)
	}
	return os.NewFile(uintptr(fd), "logind-inhibitor"), nil
}

// ReloadConfig makes logind read its configuration again (systemd sends it SIGHUP).
func (c *Conn) ReloadConfig() error {
	call := c.bus.Object(systemdService, systemdPath).Call(systemdManager+".KillUnit", 0, "systemd-logind.service", "all", int32(syscall.SIGHUP))
	if call.Err != nil {
		return fmt.Errorf("asking systemd to reload logind's configuration: %w", call.Err)
	}
	return nil
}

// WatchShutdown delivers PrepareForShutdown: true when the machine is about to shut down,
// false when a shutdown was cancelled. The channel closes with the connection.
func (c *Conn) WatchShutdown() (<-chan bool, error) {
	if err := c.bus.AddMatchSignal(dbus.WithMatchInterface(loginManager), dbus.WithMatchMember("PrepareForShutdown"),
		dbus.WithMatchObjectPath(loginPath)); err != nil {
		return nil, fmt.Errorf("watching logind's PrepareForShutdown: %w", err)
	}
	signals := make(chan *dbus.Signal, 8)
	c.bus.Signal(signals)
	out := make(chan bool)
	go func() {
		defer close(out)
		for s := range signals {
			if s.Name != loginManager+".PrepareForShutdown" || len(s.Body) != 1 {
				continue
			}
			active, ok := s.Body[0].(bool)
			if !ok {
				continue
			}
			select {
			case out <- active:
			case <-c.done:
				return
			}
		}
	}()
	return out, nil
}

// WriteDelayOverride writes the drop-in that raises logind's InhibitDelayMaxSec to delay (whole
// seconds, rounded up); logind reads it on ReloadConfig.
func WriteDelayOverride(dir string, delay time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	secs := int64((delay + time.Second - 1) / time.Second)
	body := fmt.Sprintf("# Written by nodelet: graceful node shutdown needs this long.\n[Login]\nInhibitDelayMaxSec=%d\n", secs)
	path := filepath.Join(dir, DropInFile)
	if err := atomicfile.WriteFile(path, []byte(body), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
