package node

import (
	"errors"
	"net"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/host/machine"
)

func TestDescriberReportsWhatTheControllerWouldPost(t *testing.T) {
	clock := clocktesting.NewFakeClock(testStart)
	h := &health{}
	memoryPressure := false
	d, err := NewDescriber(Local(testNode, nil, nil), testOptions(), Deps{
		Runtime: &fakeRuntime{name: "containerd", version: "1.6.20"}, Health: h.check,
		Pressure: func() (bool, bool, bool) { return memoryPressure, false, false },
		Machine:  testMachine(), Paths: machine.MachinePaths{Proc: "/nonexistent", Statfs: fakeStatfs}, Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	d.c.primaryIP = func() (net.IP, error) { return nil, errors.New("no host address in tests") }

	n := d.Describe(t.Context())
	cpu, mem := n.Status.Allocatable[v1.ResourceCPU], n.Status.Capacity[v1.ResourceMemory]
	if cpu.MilliValue() != 3250 || mem.Value() != 8<<30 {
		t.Errorf("allocatable cpu %s, capacity memory %s; want 3250m (4 CPUs less 750m reserved) and 8Gi", cpu.String(), mem.String())
	}
	if n.Status.NodeInfo.ContainerRuntimeVersion != "containerd://1.6.20" || n.Status.NodeInfo.KernelVersion != "6.1.0-test" {
		t.Errorf("node info %+v", n.Status.NodeInfo)
	}
	if c := condition(n, v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v, want True", c)
	}

	// Conditions keep their transition time while unchanged and move it when they change.
	clock.Step(time.Minute)
	h.set(errors.New("PLEG is not healthy"))
	memoryPressure = true
	n = d.Describe(t.Context())
	if c := condition(n, v1.NodeReady); c.Status != v1.ConditionFalse || c.Message != "PLEG is not healthy" || !c.LastTransitionTime.Time.Equal(testStart.Add(time.Minute)) {
		t.Errorf("Ready after the health check failed = %+v", c)
	}
	if c := condition(n, v1.NodeDiskPressure); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(testStart) {
		t.Errorf("DiskPressure = %+v, want False since the start", c)
	}
	if c := condition(n, v1.NodeMemoryPressure); c.Status != v1.ConditionTrue {
		t.Errorf("MemoryPressure = %+v, want True", c)
	}
}
