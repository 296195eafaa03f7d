package cpumanager

import (
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

var strict = map[string]string{cmpolicy.OptionStrictCPUReservation: "true"}

// Under strict-cpu-reservation the reserved CPU is in no pool: BestEffort containers run on the
// rest, the state file's shared pool lacks it, and what can be given exclusively (the
// pod-resources allocatable) is unchanged.
func TestStrictReservationKeepsReservedCPUsOutOfTheSharedPool(t *testing.T) {
	m, _, dir := newManager(t, topology.Synthetic(1, 1, 4, 1, 0), cmpolicy.CPUStatic, 1, strict)
	if got := readState(t, dir).DefaultCPUSet; got != "1-3" {
		t.Errorf("state file's shared pool %q, want 1-3", got)
	}
	be := pod("be", "", "app")
	if got := m.ContainerCpuset(be, &be.Spec.Containers[0]); got != "1-3" {
		t.Errorf("BestEffort container is created on %q, want 1-3", got)
	}
	if got := m.AllocatableCPUs().String(); got != "1-3" {
		t.Errorf("allocatable %q, want 1-3", got)
	}
	g := pod("g", "2", "app")
	if err := allocate(t, m, g); err != nil {
		t.Fatal(err)
	}
	if got := m.ContainerCPUs(g.UID, "app"); got.Contains(0) || got.Size() != 2 {
		t.Errorf("Guaranteed container holds %s", got)
	}
	if got := m.SharedCPUs(); got.Contains(0) || got.Size() != 1 {
		t.Errorf("shared pool %s after pinning 2 CPUs", got)
	}
	m.RemovePod(g.UID)
	if got := m.SharedCPUs().String(); got != "1-3" {
		t.Errorf("shared pool %q after the pod left, want 1-3", got)
	}
}

// Without the option the shared pool keeps the reserved CPU, as before.
func TestReservedCPUsStaySharedWithoutStrictReservation(t *testing.T) {
	_, _, dir := newManager(t, topology.Synthetic(1, 1, 4, 1, 0), cmpolicy.CPUStatic, 1, map[string]string{cmpolicy.OptionStrictCPUReservation: "false"})
	if got := readState(t, dir).DefaultCPUSet; got != "0-3" {
		t.Errorf("state file's shared pool %q, want 0-3", got)
	}
}

// A state file is checked against the option at start, with upstream's messages.
func TestStrictReservationChecksTheRestoredState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		options map[string]string
		want    string
	}{
		{"reserved CPU shared under strict", `{"policyName":"static","defaultCpuSet":"0-1"}`, strict,
			`some of strictly reserved cpus: "0" are present in defaultCpuSet: "0-1"`},
		{"strict state without the option", `{"policyName":"static","defaultCpuSet":"1"}`, nil,
			`not all reserved cpus: "0" are present in defaultCpuSet: "1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeState(t, dir, tc.file)
			_, err := New(managerOptions(dir, twoCPUs, cmpolicy.CPUStatic, 1, tc.options, newNode()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	writeState(t, dir, `{"policyName":"static","defaultCpuSet":"1"}`)
	newManagerIn(t, dir, twoCPUs, cmpolicy.CPUStatic, 1, strict) // a strict state restores
}
