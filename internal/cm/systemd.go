package cm

// The systemd cgroup driver (cgroupDriver: systemd). Every QoS and pod cgroup is a systemd
// slice, named as the upstream kubelet names them so that runtimes and tools find them:
// kubepods.slice, kubepods-burstable.slice, kubepods-burstable-pod<uid>.slice (the uid's
// dashes become underscores, since a dash separates a slice name's levels). Slices are made
// (StartTransientUnit), limited (SetUnitProperties) and removed (StopUnit) over D-Bus;
// the limits are then also written to the slice's cgroup files through runc's library, as
// its systemd driver does, so that both agree.
//
// runc's own systemd manager is not used: it keeps one process-wide D-Bus connection to the
// system bus and makes the slice's directory under the fixed /sys/fs/cgroup, so it can be
// pointed neither at a fake tree nor at a fake systemd. The D-Bus client is go-systemd's,
// the one that library uses.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// systemdUnits are the systemd manager calls the driver makes; go-systemd's *dbus.Conn
// has them, and tests substitute a fake systemd that records them.
type systemdUnits interface {
	StartTransientUnitContext(ctx context.Context, name, mode string, props []sddbus.Property, done chan<- string) (int, error)
	SetUnitPropertiesContext(ctx context.Context, name string, runtime bool, props ...sddbus.Property) error
	StopUnitContext(ctx context.Context, name, mode string, done chan<- string) (int, error)
}

// systemdTimeout bounds one unit job, as systemd may queue it behind others.
const systemdTimeout = 30 * time.Second

// ConnectSystemd opens the D-Bus connection to systemd the systemd driver uses.
func ConnectSystemd(ctx context.Context) (*sddbus.Conn, error) {
	conn, err := sddbus.NewWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("cgroupDriver systemd: connecting to systemd over D-Bus: %w", err)
	}
	return conn, nil
}

// sliceOf names a QoS class's slice under the kubepods slice.
func sliceOf(class v1.PodQOSClass) string {
	switch class {
	case v1.PodQOSBurstable:
		return kubepodsName + "-" + burstableName + ".slice"
	case v1.PodQOSBestEffort:
		return kubepodsName + "-" + besteffortName + ".slice"
	}
	return kubepodsName + ".slice"
}

// podSlice names a pod's slice: the QoS slice's name, "-pod" and the escaped uid.
func podSlice(class v1.PodQOSClass, uid types.UID) string {
	return strings.TrimSuffix(sliceOf(class), ".slice") + "-" + podPrefix + strings.ReplaceAll(string(uid), "-", "_") + ".slice"
}

// podSliceUID reads the uid back from a pod slice's name in the class's slice.
func podSliceUID(class v1.PodQOSClass, name string) (types.UID, bool) {
	rest, ok := strings.CutPrefix(name, strings.TrimSuffix(sliceOf(class), ".slice")+"-"+podPrefix)
	if !ok {
		return "", false
	}
	uid, ok := strings.CutSuffix(rest, ".slice")
	return types.UID(strings.ReplaceAll(uid, "_", "-")), ok && uid != ""
}

// ensureSlices starts, from the top, each slice of cgroup (a path of slices such as
// /kubepods.slice/kubepods-burstable.slice) whose directory is not there yet.
func (m *QOSCgroups) ensureSlices(cgroup string) error {
	parent := "-.slice"
	dir := m.create[0].dir
	for _, slice := range strings.Split(strings.Trim(cgroup, "/"), "/") {
		dir = filepath.Join(dir, slice)
		if !isDir(dir) {
			if err := m.startSlice(slice, parent); err != nil {
				return err
			}
		}
		parent = slice
	}
	return nil
}

func (m *QOSCgroups) startSlice(slice, parent string) error {
	props := []sddbus.Property{
		sddbus.PropDescription("nodelet " + slice), sddbus.PropWants(parent),
		newProperty("DefaultDependencies", false),
		newProperty("MemoryAccounting", true), newProperty("CPUAccounting", true), newProperty("TasksAccounting", true),
	}
	if m.create[0].v2 {
		props = append(props, newProperty("IOAccounting", true))
	}
	err := m.unitJob(slice, func(ctx context.Context, done chan<- string) (int, error) {
		return m.systemd.StartTransientUnitContext(ctx, slice, "replace", props, done)
	})
	if isDBusError(err, "org.freedesktop.systemd1.UnitExists") {
		return nil // made meanwhile, e.g. by the runtime for a container of the pod
	}
	if err != nil {
		return fmt.Errorf("starting systemd slice %s: %w", slice, err)
	}
	return nil
}

// stopSlice stops the slice at the end of cgroup; systemd removes its cgroup.
func (m *QOSCgroups) stopSlice(cgroup string) error {
	slice := path.Base(cgroup)
	err := m.unitJob(slice, func(ctx context.Context, done chan<- string) (int, error) {
		return m.systemd.StopUnitContext(ctx, slice, "replace", done)
	})
	if isDBusError(err, "org.freedesktop.systemd1.NoSuchUnit") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stopping systemd slice %s: %w", slice, err)
	}
	return nil
}

// unitJob runs a call that queues a systemd job and waits for the job's result.
func (m *QOSCgroups) unitJob(unit string, call func(context.Context, chan<- string) (int, error)) error {
	ctx, cancel := context.WithTimeout(m.systemdCtx, systemdTimeout)
	defer cancel()
	done := make(chan string, 1)
	if _, err := call(ctx, done); err != nil {
		return err
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("systemd job for %s: %s", unit, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("systemd job for %s: %w", unit, ctx.Err())
	}
}

// setSliceProperties tells systemd the limits of the slice at the end of cgroup, so that it
// keeps them (systemd rewrites a unit's cgroup files from its properties on reload).
func (m *QOSCgroups) setSliceProperties(cgroup string, l limits) error {
	props := sliceProperties(l, m.create[0].v2)
	if len(props) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(m.systemdCtx, systemdTimeout)
	defer cancel()
	if err := m.systemd.SetUnitPropertiesContext(ctx, path.Base(cgroup), true, props...); err != nil {
		return fmt.Errorf("setting the properties of systemd slice %s: %w", path.Base(cgroup), err)
	}
	return nil
}

// sliceProperties are l as systemd unit properties; unlimited is the largest value
// ("infinity").
func sliceProperties(l limits, v2 bool) []sddbus.Property {
	var props []sddbus.Property
	if l.cpuShares != 0 {
		if v2 {
			props = append(props, newProperty("CPUWeight", uint64(sharesToWeight(l.cpuShares))))
		} else {
			props = append(props, newProperty("CPUShares", uint64(l.cpuShares)))
		}
	}
	if l.cpuQuota != 0 {
		perSec := uint64(math.MaxUint64)
		if l.cpuQuota > 0 {
			perSec = uint64(l.cpuQuota) * uint64(time.Second/time.Microsecond) / quotaPeriod
		}
		props = append(props, newProperty("CPUQuotaPerSecUSec", perSec))
	}
	if l.memory != 0 {
		name := "MemoryMax"
		if !v2 {
			name = "MemoryLimit"
		}
		props = append(props, newProperty(name, infinityOr(l.memory)))
	}
	if l.pids != 0 {
		props = append(props, newProperty("TasksMax", infinityOr(l.pids)))
	}
	return props
}

func infinityOr(n int64) uint64 {
	if n < 0 {
		return math.MaxUint64
	}
	return uint64(n)
}

func newProperty(name string, value any) sddbus.Property {
	return sddbus.Property{Name: name, Value: godbus.MakeVariant(value)}
}

// podName is the name of a pod's cgroup in its QoS class's cgroup.
func (m *QOSCgroups) podName(class v1.PodQOSClass, uid types.UID) string {
	if m.systemd != nil {
		return podSlice(class, uid)
	}
	return podPrefix + string(uid)
}

// podUID reads the pod's uid from the name of a cgroup in the class's cgroup.
func (m *QOSCgroups) podUID(class v1.PodQOSClass, name string) (types.UID, bool) {
	if m.systemd != nil {
		return podSliceUID(class, name)
	}
	uid, ok := strings.CutPrefix(name, podPrefix)
	return types.UID(uid), ok && uid != ""
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func isDBusError(err error, name string) bool {
	var dbusErr godbus.Error
	return errors.As(err, &dbusErr) && dbusErr.Name == name
}
