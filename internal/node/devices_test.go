package node

import (
	"context"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/testutil"
)

const testDevice v1.ResourceName = "example.com/dev"

// fakeDevices is a switchable device plugin report.
type fakeDevices struct {
	mu                    sync.Mutex
	capacity, allocatable int64
	changed               chan struct{}
}

func (f *fakeDevices) set(capacity, allocatable int64) {
	f.mu.Lock()
	f.capacity, f.allocatable = capacity, allocatable
	f.mu.Unlock()
	f.changed <- struct{}{}
}

func (f *fakeDevices) resources() (v1.ResourceList, v1.ResourceList) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return v1.ResourceList{testDevice: *resource.NewQuantity(f.capacity, resource.DecimalSI)},
		v1.ResourceList{testDevice: *resource.NewQuantity(f.allocatable, resource.DecimalSI)}
}

func deviceCounts(n *v1.Node) (capacity, allocatable int64) {
	c, okC := n.Status.Capacity[testDevice]
	a, okA := n.Status.Allocatable[testDevice]
	if !okC || !okA {
		return -1, -1
	}
	return c.Value(), a.Value()
}

func TestDevicesAreReportedAndPostedOnChange(t *testing.T) {
	e := newEnv(t, testOptions())
	devices := &fakeDevices{capacity: 2, allocatable: 2, changed: make(chan struct{}, 1)}
	e.ctrl.deps.Devices, e.ctrl.deps.DevicesChanged = devices.resources, devices.changed
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.ctrl.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	testutil.Eventually(t, "registration", func() bool { return e.ctrl.Registered() })
	n := e.node(t)
	if c, a := deviceCounts(n); c != 2 || a != 2 {
		t.Fatalf("registered with devices %d/%d, want 2/2", c, a)
	}
	// Reservations apply to native resources only.
	if cpu := n.Status.Allocatable[v1.ResourceCPU]; cpu.MilliValue() != 3250 {
		t.Errorf("cpu allocatable %dm, want 3250m", cpu.MilliValue())
	}

	// A change is posted at once, without a tick of the fake clock.
	devices.set(2, 1)
	testutil.Eventually(t, "allocatable 1", func() bool { c, a := deviceCounts(e.node(t)); return c == 2 && a == 1 })
	devices.set(0, 0)
	testutil.Eventually(t, "zero devices", func() bool { c, a := deviceCounts(e.node(t)); return c == 0 && a == 0 })
}
