package cm

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// systemdSignatures are the D-Bus types systemd takes the properties the driver sets as; a
// property of another type is refused by systemd ("Invalid argument").
var systemdSignatures = map[string]string{
	"Description": "s", "Wants": "as", "DefaultDependencies": "b",
	"MemoryAccounting": "b", "CPUAccounting": "b", "TasksAccounting": "b", "IOAccounting": "b",
	"CPUWeight": "t", "CPUShares": "t", "CPUQuotaPerSecUSec": "t", "MemoryMax": "t", "MemoryLimit": "t", "TasksMax": "t",
}

// property is one (sv) of a unit call as it comes over the bus.
type property struct {
	Name  string
	Value godbus.Variant
}

// busSystemd serves the systemd manager's unit calls on a bus, hands them to the fake
// systemd, and announces each finished job with JobRemoved, as systemd does.
type busSystemd struct {
	conn *godbus.Conn
	sd   *fakeSystemd

	mu         sync.Mutex
	badTypes   []string // "unit property signature" of properties systemd would refuse
	nextJob    uint32
	jobResults []string
}

func (b *busSystemd) checkTypes(unit string, props []property) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range props {
		if want := systemdSignatures[p.Name]; p.Value.Signature().String() != want {
			b.badTypes = append(b.badTypes, unit+" "+p.Name+" "+p.Value.Signature().String())
		}
	}
}

// job runs a unit job on the fake systemd and emits its JobRemoved.
func (b *busSystemd) job(unit string, run func(done chan<- string) error) (godbus.ObjectPath, *godbus.Error) {
	done := make(chan string, 1)
	if err := run(done); err != nil {
		if dbusErr, ok := err.(godbus.Error); ok {
			return "", &dbusErr
		}
		return "", godbus.MakeFailedError(err)
	}
	b.mu.Lock()
	b.nextJob++
	id := b.nextJob
	b.mu.Unlock()
	path := godbus.ObjectPath("/org/freedesktop/systemd1/job/" + strings.Repeat("1", int(id)))
	// The client waits for the signal of the job path this call returns; it holds the
	// signal until the reply is in.
	if err := b.conn.Emit("/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager.JobRemoved", id, path, unit, <-done); err != nil {
		return "", godbus.MakeFailedError(err)
	}
	return path, nil
}

func (b *busSystemd) StartTransientUnit(name, mode string, props []property, aux []struct {
	Name  string
	Props []property
}) (godbus.ObjectPath, *godbus.Error) {
	b.checkTypes(name, props)
	return b.job(name, func(done chan<- string) error {
		_, err := b.sd.StartTransientUnitContext(context.Background(), name, mode, toSystemd(props), done)
		return err
	})
}

func (b *busSystemd) SetUnitProperties(name string, runtime bool, props []property) *godbus.Error {
	b.checkTypes(name, props)
	if err := b.sd.SetUnitPropertiesContext(context.Background(), name, runtime, toSystemd(props)...); err != nil {
		dbusErr := err.(godbus.Error)
		return &dbusErr
	}
	return nil
}

func (b *busSystemd) StopUnit(name, mode string) (godbus.ObjectPath, *godbus.Error) {
	return b.job(name, func(done chan<- string) error {
		_, err := b.sd.StopUnitContext(context.Background(), name, mode, done)
		return err
	})
}

func toSystemd(props []property) []sddbus.Property {
	out := make([]sddbus.Property, len(props))
	for i, p := range props {
		out[i] = sddbus.Property{Name: p.Name, Value: p.Value}
	}
	return out
}

// startBus runs a private dbus-daemon and returns its address.
func startBus(t *testing.T) string {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("needs dbus-daemon")
	}
	socket := filepath.Join(t.TempDir(), "bus")
	cmd := exec.Command(daemon, "--session", "--nofork", "--print-address", "--address=unix:path="+socket)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n') // printed once it listens
	if err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	return strings.TrimSpace(addr)
}

// serveSystemd puts a fake systemd on the bus at addr under systemd's name.
func serveSystemd(t *testing.T, addr string, sd *fakeSystemd) *busSystemd {
	t.Helper()
	conn, err := godbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	b := &busSystemd{conn: conn, sd: sd}
	if err := conn.Export(b, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.freedesktop.systemd1", godbus.NameFlagDoNotQueue); err != nil || reply != godbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning org.freedesktop.systemd1: %v %v", reply, err)
	}
	return b
}

// TestSystemdDriverOverDBus runs the driver on the connection nodelet makes (ConnectSystemd,
// go-systemd on the system bus, here a private bus) against a fake systemd served over
// D-Bus: the unit calls arrive, with the property types systemd takes, and each job's result
// comes back through JobRemoved.
func TestSystemdDriverOverDBus(t *testing.T) {
	addr := startBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
	tree := newFakeV2(t)
	bus := serveSystemd(t, addr, newFakeSystemd(tree))
	conn, err := ConnectSystemd(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	m, err := NewQOSCgroups(Options{Root: tree.root, fs: tree, systemd: conn, systemdCtx: t.Context(), PodPidsLimit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	pod := burstable("1234-abcd", "100m")
	if _, err := m.EnsurePod(pod); err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodConfig(pod, PodConfig{Memory: 300 << 20, CPUQuota: 30000}); err != nil {
		t.Fatal(err)
	}
	if err := m.RemovePod(pod.UID); err != nil {
		t.Fatal(err)
	}
	const slice = "kubepods-burstable-pod1234_abcd.slice"
	want := []string{
		"start kubepods.slice wants=-.slice", "start kubepods-burstable.slice wants=kubepods.slice",
		"start kubepods-besteffort.slice wants=kubepods.slice",
		"start " + slice + " wants=kubepods-burstable.slice", "set " + slice, "stop " + slice,
	}
	for _, c := range want {
		if !slices.Contains(bus.sd.calls, c) {
			t.Errorf("no %q among the calls systemd got: %q", c, bus.sd.calls)
		}
	}
	if len(bus.badTypes) > 0 {
		t.Errorf("properties of a type systemd refuses: %q", bus.badTypes)
	}
	if got := bus.sd.props[slice]["CPUQuotaPerSecUSec"]; got != uint64(300000) {
		t.Errorf("CPUQuotaPerSecUSec after resize %v, want 300000 (30ms per 100ms)", got)
	}
}
