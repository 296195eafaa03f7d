package cpumanager

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
)

// TestUpstreamStateFile reads cpu_manager_state as the real upstream kubelet v1.33.4 wrote it
// (testdata/upstream/gen: static policy, half a CPU reserved, a Guaranteed pod with one CPU on
// this 2-CPU machine): nodelet accepts its checksum, restores the assignment, and writes the
// same state back byte for byte.
func TestUpstreamStateFile(t *testing.T) {
	golden, err := os.ReadFile("testdata/upstream/cpu_manager_state")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeState(t, dir, string(golden))
	m, _ := newManagerIn(t, dir, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	f := readState(t, dir)
	var pod, container, cpus string
	for p, containers := range f.Entries {
		for c, s := range containers {
			pod, container, cpus = p, c, s
		}
	}
	if len(f.Entries) != 1 || container != "app" || cpus != "1" || f.DefaultCPUSet != "0" {
		t.Fatalf("upstream's state %+v: want one container app on CPU 1, shared 0", f)
	}
	if got := m.ContainerCPUs(typesUID(pod), "app").String(); got != "1" {
		t.Errorf("restored assignment %q, want 1", got)
	}
	if err := store(dir, cmpolicy.CPUStatic, m.state); err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(ours) != string(golden) {
		t.Errorf("nodelet writes\n%s\nupstream wrote\n%s", ours, golden)
	}
}
