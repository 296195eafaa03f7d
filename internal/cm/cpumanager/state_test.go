package cpumanager

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/cm/checkpoint"
	"github.com/nodelet/nodelet/internal/cm/cmpolicy"
	"github.com/nodelet/nodelet/internal/host/topology"
)

func readState(t *testing.T, dir string) stateFile {
	t.Helper()
	var f stateFile
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeState(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStateSurvivesARestart(t *testing.T) {
	m, _, dir := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	g := pod("g", "1", "app")
	if err := allocate(t, m, g); err != nil {
		t.Fatal(err)
	}
	f := readState(t, dir)
	if f.PolicyName != "static" || f.DefaultCPUSet != "0" || f.Entries["g-uid"]["app"] != "1" || f.Checksum == 0 {
		t.Fatalf("state file %+v", f)
	}
	again, _ := newManagerIn(t, dir, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	if got := again.ContainerCPUs(g.UID, "app").String(); got != "1" {
		t.Errorf("after a restart the container holds %q, want 1", got)
	}
	if err := allocate(t, again, g); err != nil {
		t.Errorf("re-admitting the running pod after a restart: %v", err)
	}
	if err := allocate(t, again, pod("other", "1", "app")); err == nil {
		t.Error("a second pod got the restored pod's CPU")
	}
}

func TestPolicyChangeWithStaleStateRefusesToStart(t *testing.T) {
	m, _, dir := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	if err := allocate(t, m, pod("g", "1", "app")); err != nil {
		t.Fatal(err)
	}
	_, err := New(managerOptions(dir, twoCPUs, cmpolicy.CPUNone, 0, nil, newNode()))
	want := `could not restore state from checkpoint: configured policy "none" differs from state checkpoint policy "static", please drain this node and delete the CPU manager checkpoint file "` + filepath.Join(dir, StateFile) + `" before restarting Kubelet`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant it to hold %s", err, want)
	}
}

func TestCorruptStateRefusesToStart(t *testing.T) {
	m, _, dir := newManager(t, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	if err := allocate(t, m, pod("g", "1", "app")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	writeState(t, dir, strings.Replace(string(data), `"app":"1"`, `"app":"0"`, 1))
	_, err = New(managerOptions(dir, twoCPUs, cmpolicy.CPUStatic, 1, nil, newNode()))
	var corrupt *checkpoint.CorruptError
	if !errors.As(err, &corrupt) {
		t.Fatalf("edited state file: err = %v, want a CorruptError", err)
	}
	writeState(t, dir, "{not json")
	if _, err := New(managerOptions(dir, twoCPUs, cmpolicy.CPUStatic, 1, nil, newNode())); err == nil {
		t.Fatal("a state file that is not JSON was accepted")
	}
}

func TestStateWithoutChecksumIsAccepted(t *testing.T) {
	dir := t.TempDir()
	writeState(t, dir, `{"policyName":"static","defaultCpuSet":"0","entries":{"g-uid":{"app":"1"}}}`)
	m, _ := newManagerIn(t, dir, twoCPUs, cmpolicy.CPUStatic, 1, nil)
	if got := m.ContainerCPUs("g-uid", "app").String(); got != "1" {
		t.Errorf("holds %q, want 1", got)
	}
}

func TestInvalidStateRefusesToStart(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"reserved CPU assigned", `{"policyName":"static","defaultCpuSet":"1","entries":{"p":{"c":"0"}}}`, `not all reserved cpus: "0" are present in defaultCpuSet: "1"`},
		{"assigned CPU also shared", `{"policyName":"static","defaultCpuSet":"0-1","entries":{"p":{"c":"1"}}}`, `overlaps with default cpuset`},
		{"CPUs the machine lacks", `{"policyName":"static","defaultCpuSet":"0-3"}`, `current set of available CPUs "0-1" doesn't match with CPUs in state "0-3"`},
		{"empty pool with assignments", `{"policyName":"static","defaultCpuSet":"","entries":{"p":{"c":"1"}}}`, `default cpuset cannot be empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeState(t, dir, tc.file)
			_, err := New(managerOptions(dir, twoCPUs, cmpolicy.CPUStatic, 1, nil, newNode()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFirstStartWritesTheState(t *testing.T) {
	_, _, dir := newManager(t, topology.Synthetic(1, 1, 2, 2, 0), cmpolicy.CPUStatic, 1, nil)
	f := readState(t, dir)
	if f.PolicyName != "static" || f.DefaultCPUSet != "0-3" || len(f.Entries) != 0 {
		t.Errorf("state file %+v", f)
	}
}
