package app

import (
	"path/filepath"
	"testing"

	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/cm/cpumanager"
	"github.com/nodelet/nodelet/internal/cm/deviceplugin"
	"github.com/nodelet/nodelet/internal/cm/memorymanager"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

// The daemon's managers reach the runtime as hooks in the documented order (devices, CPUs,
// memory); a foreground pod's agent, without them, and without pod cgroups, has none.
func TestPodHooksOrder(t *testing.T) {
	dir := t.TempDir()
	cpus, err := cpumanager.New(cpumanager.Options{
		Policy: cmpolicy.CPUNone, OptionGates: cmpolicy.DefaultCPUOptionGates,
		Machine: topology.Synthetic(1, 1, 2, 1, 1<<30), StateDir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	memory, err := memorymanager.New(memorymanager.Options{Policy: memorymanager.PolicyNone, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	devices, err := deviceplugin.New(deviceplugin.Options{Dir: filepath.Join(dir, "device-plugins")})
	if err != nil {
		t.Fatal(err)
	}
	n := &agent{cfg: &config.Config{Settings: config.Settings{DisableCPUQuotaWithExclusiveCPUs: true}}, cm: &cm.ContainerManager{},
		cpus: cpus, memory: memory, devices: devices}
	h := n.podHooks()
	want := []podhooks.Container{devices, cpus, memory}
	if len(h.Container) != len(want) {
		t.Fatalf("container hooks %v, want %v", h.Container, want)
	}
	for i := range want {
		if h.Container[i] != want[i] {
			t.Errorf("container hook %d is %T, want %T", i, h.Container[i], want[i])
		}
	}
	if len(h.Sandbox) != 0 || len(h.Resources) != 1 {
		t.Errorf("sandbox hooks %v (no pod cgroups: want none), resources hooks %v (want the quota's)", h.Sandbox, h.Resources)
	}
	bare := (&agent{cfg: &config.Config{}, cm: &cm.ContainerManager{}}).podHooks()
	if len(bare.Sandbox)+len(bare.Container)+len(bare.Resources) != 0 {
		t.Errorf("an agent without managers has hooks %+v", bare)
	}
}
