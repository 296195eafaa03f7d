// Command fakelogind stands in for systemd-logind on machines that run no systemd, so the
// graceful node shutdown of both kubelets can be tested: it starts a private dbus-daemon as the
// system bus and answers on it as org.freedesktop.login1 (Inhibit, ListInhibitors,
// InhibitDelayMaxUSec) and as much of org.freedesktop.systemd1 as a kubelet uses (KillUnit
// SIGHUP of systemd-logind.service re-reads InhibitDelayMaxSec from logind.conf and its
// drop-ins). It does not shut anything down: the test sends PrepareForShutdown itself, as the
// upstream node suite does. Once ready it prints DBUS_SYSTEM_BUS_ADDRESS=… on stdout.
//
//	fakelogind -dir /run/nodelet-fakelogind [-delay 5s] [-conf /etc/systemd/logind.conf]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

const (
	loginPath      = dbus.ObjectPath("/org/freedesktop/login1")
	loginManager   = "org.freedesktop.login1.Manager"
	systemdPath    = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdManager = "org.freedesktop.systemd1.Manager"
)

// busConfig lets every local client own any name and send anything: the bus is the test's own.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow send_type="method_call"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow send_type="signal"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
  </policy>
</busconfig>
`

func main() {
	dir := flag.String("dir", "/run/nodelet-fakelogind", "directory for the bus socket and its config")
	delay := flag.Duration("delay", 5*time.Second, "InhibitDelayMaxSec when no logind.conf sets it (systemd's default is 5s)")
	conf := flag.String("conf", "/etc/systemd/logind.conf", "logind.conf; its drop-ins are read from <conf>.d/*.conf")
	flag.Parse()
	log.SetPrefix("fakelogind: ")

	addr, daemon, err := startBus(*dir)
	if err != nil {
		log.Fatal(err)
	}
	defer daemon.Process.Kill()
	bus, err := dbus.Connect(addr)
	if err != nil {
		log.Fatalf("connecting to %s: %v", addr, err)
	}
	l := &logind{conf: *conf, fallback: *delay}
	if err := l.serve(bus); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("DBUS_SYSTEM_BUS_ADDRESS=%s\n", addr)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	select {
	case <-sigs:
	case err := <-exited:
		log.Fatalf("dbus-daemon exited: %v", err)
	}
}

// startBus runs dbus-daemon on a socket in dir and waits until it accepts connections.
func startBus(dir string) (string, *exec.Cmd, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	socket := filepath.Join(dir, "system_bus_socket")
	os.Remove(socket)
	cfg := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(busConfig, socket)), 0o644); err != nil {
		return "", nil, err
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+cfg, "--nofork", "--nopidfile")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // the bus goes with us
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting dbus-daemon (apt-get install dbus-daemon): %w", err)
	}
	addr := "unix:path=" + socket
	for i := 0; i < 100; i++ {
		if c, err := dbus.Connect(addr); err == nil {
			c.Close()
			return addr, cmd, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	return "", nil, fmt.Errorf("dbus-daemon did not listen on %s", socket)
}

// inhibitor is one lock, as ListInhibitors reports it: what, who, why, mode, uid, pid.
type inhibitor struct {
	What, Who, Why, Mode string
	UID, PID             uint32
}

type logind struct {
	conf     string
	fallback time.Duration
	props    *prop.Properties

	mu    sync.Mutex
	locks map[int]inhibitor
	next  int
}

func (l *logind) serve(bus *dbus.Conn) error {
	l.locks = map[int]inhibitor{}
	props, err := prop.Export(bus, loginPath, prop.Map{loginManager: {
		"InhibitDelayMaxUSec": {Value: uint64(l.readDelay() / time.Microsecond), Emit: prop.EmitTrue},
	}})
	if err != nil {
		return err
	}
	l.props = props
	if err := bus.ExportMethodTable(map[string]interface{}{
		"Inhibit": l.inhibit, "ListInhibitors": l.list,
	}, loginPath, loginManager); err != nil {
		return err
	}
	if err := bus.ExportMethodTable(map[string]interface{}{"KillUnit": l.killUnit}, systemdPath, systemdManager); err != nil {
		return err
	}
	for _, name := range []string{"org.freedesktop.login1", "org.freedesktop.systemd1"} {
		reply, err := bus.RequestName(name, dbus.NameFlagDoNotQueue)
		if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			return fmt.Errorf("owning %s: %v (reply %v)", name, err, reply)
		}
	}
	return nil
}

// inhibit hands out the write end of a pipe; the lock lasts until every copy is closed.
func (l *logind) inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	if mode != "delay" && mode != "block" {
		return 0, dbus.MakeFailedError(fmt.Errorf("invalid mode %q", mode))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	l.mu.Lock()
	id := l.next
	l.next++
	l.locks[id] = inhibitor{What: what, Who: who, Why: why, Mode: mode}
	l.mu.Unlock()
	log.Printf("lock %d taken: %s %s by %q (%s)", id, mode, what, who, why)
	go func() {
		io.Copy(io.Discard, r)
		r.Close()
		l.mu.Lock()
		delete(l.locks, id)
		l.mu.Unlock()
		log.Printf("lock %d released", id)
	}()
	// The reply carries a duplicate of w; ours closes once it has surely gone out.
	time.AfterFunc(2*time.Second, func() { w.Close() })
	return dbus.UnixFD(w.Fd()), nil
}

func (l *logind) list() ([]inhibitor, *dbus.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int, 0, len(l.locks))
	for id := range l.locks {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]inhibitor, 0, len(ids))
	for _, id := range ids {
		out = append(out, l.locks[id])
	}
	return out, nil
}

// killUnit takes SIGHUP to systemd-logind.service as logind's reload, as systemd would deliver it.
func (l *logind) killUnit(unit, who string, sig int32) *dbus.Error {
	if unit != "systemd-logind.service" || syscall.Signal(sig) != syscall.SIGHUP {
		return dbus.MakeFailedError(fmt.Errorf("fakelogind only reloads systemd-logind.service (SIGHUP), not %s signal %d", unit, sig))
	}
	delay := l.readDelay()
	l.props.SetMust(loginManager, "InhibitDelayMaxUSec", uint64(delay/time.Microsecond))
	log.Printf("reloaded: InhibitDelayMaxSec=%v", delay)
	return nil
}

// readDelay is InhibitDelayMaxSec from logind.conf, then its drop-ins in name order (the last
// setting wins), else the fallback.
func (l *logind) readDelay() time.Duration {
	delay := l.fallback
	files := []string{l.conf}
	dropIns, _ := filepath.Glob(l.conf + ".d/*.conf")
	sort.Strings(dropIns)
	for _, f := range append(files, dropIns...) {
		if d, ok := delayIn(f); ok {
			delay = d
		}
	}
	return delay
}

func delayIn(path string) (time.Duration, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var out time.Duration
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.TrimSpace(key) != "InhibitDelayMaxSec" {
			continue
		}
		value = strings.TrimSpace(value)
		if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
			out, found = time.Duration(secs)*time.Second, true
		} else if d, err := time.ParseDuration(value); err == nil {
			out, found = d, true
		}
	}
	return out, found
}
