package memorymanager

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/cm/checkpoint"
)

func TestStateSurvivesRestart(t *testing.T) {
	m, opts := newStatic(t, 2, 8*gi, gi)
	pod := guaranteedPod("p", container("app", 10*gi, false))
	if err := admit(t, m, pod); err != nil {
		t.Fatal(err)
	}
	again, err := New(opts)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	if got := mems(again, pod, "app"); got != "0,1" {
		t.Errorf("after restart the pod is on %q, want 0,1", got)
	}
	if got := free(again); got[0] != 0 || got[1] != 4*gi {
		t.Errorf("free after restart = %v, want the same as before", got)
	}
	// Re-admitting the running pod (as after a restart) keeps its blocks.
	if err := admit(t, again, pod); err != nil || free(again)[1] != 4*gi {
		t.Errorf("re-admission: %v, free %v", err, free(again))
	}
	hints := again.ContainerHints(pod, &pod.Spec.Containers[0])["memory"]
	if len(hints) != 1 || !hints[0].Preferred || hints[0].NUMANodes.String() != "0,1" {
		t.Errorf("hints of the placed container = %v, want its nodes, preferred", hints)
	}
}

func TestStateFileIsUpstreamShaped(t *testing.T) {
	m, opts := newStatic(t, 1, 8*gi, gi)
	if err := admit(t, m, guaranteedPod("uid-1", container("app", gi, false))); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(opts.StateDir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"policyName", "machineState", "entries", "checksum"} {
		if _, ok := file[key]; !ok {
			t.Errorf("state file lacks %q: %s", key, data)
		}
	}
	want := `{"uid-1":{"app":[{"numaAffinity":[0],"type":"memory","size":1073741824}]}}`
	if got := string(file["entries"]); got != want {
		t.Errorf("entries = %s, want %s", got, want)
	}
	if !bytes.Contains(file["machineState"], []byte(`"0":{"numberOfAssignments":1,"memoryMap":{"memory":{"total":8589934592,"systemReserved":1073741824,"allocatable":7516192768,"reserved":1073741824,"free":6442450944}},"cells":[0]}`)) {
		t.Errorf("machineState = %s", file["machineState"])
	}
}

func TestCorruptStateRefusesToStart(t *testing.T) {
	m, opts := newStatic(t, 1, 8*gi, gi)
	if err := admit(t, m, guaranteedPod("p", container("app", gi, false))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(opts.StateDir, StateFile)
	data, _ := os.ReadFile(path)
	tampered := bytes.Replace(data, []byte(`"size":1073741824`), []byte(`"size":1073741825`), 1)
	if bytes.Equal(data, tampered) {
		t.Fatal("nothing to tamper with")
	}
	if err := os.WriteFile(path, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(opts)
	var corrupt *checkpoint.CorruptError
	if !errors.As(err, &corrupt) {
		t.Fatalf("New on a tampered file = %v, want a corrupt-checkpoint error", err)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(opts); err == nil {
		t.Errorf("New on a file that is not JSON succeeded")
	}
}

func TestPolicyChangeRefusesToStart(t *testing.T) {
	_, opts := newStatic(t, 1, 8*gi, gi)
	_, err := New(Options{Policy: PolicyNone, StateDir: opts.StateDir})
	if err == nil || !strings.Contains(err.Error(), `configured policy "None" differs from state checkpoint policy "Static"`) {
		t.Errorf("New with None over a Static state = %v, want upstream's refusal", err)
	}
}

func TestChangedMachineRefusesToStart(t *testing.T) {
	m, opts := newStatic(t, 1, 8*gi, gi)
	if err := admit(t, m, guaranteedPod("p", container("app", gi, false))); err != nil {
		t.Fatal(err)
	}
	changed := staticOptions(opts.StateDir, 1, 8*gi, 2*gi) // reservedMemory raised
	_, err := New(changed)
	if err == nil || !strings.Contains(err.Error(), "the expected machine state is different from the real one") {
		t.Errorf("New with another reservation = %v, want a refusal", err)
	}
	// A fresh state directory starts with the new reservation.
	if _, err := New(staticOptions(t.TempDir(), 1, 8*gi, gi)); err != nil {
		t.Errorf("fresh directory: %v", err)
	}
}

func TestNoneWritesItsState(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(Options{Policy: PolicyNone, StateDir: dir}); err != nil {
		t.Fatal(err)
	}
	f, found, err := readState(dir, PolicyNone)
	if err != nil || !found || len(f.MachineState) != 0 {
		t.Errorf("state = %+v, %v, %v; want an empty None state", f, found, err)
	}
}

func TestStateWithANullNodeRefusesToStart(t *testing.T) {
	_, opts := newStatic(t, 1, 8*gi, gi)
	f := &stateFile{PolicyName: PolicyStatic, MachineState: numaNodeMap{0: nil}, Entries: assignments{}}
	f.Checksum = f.sum()
	if err := checkpoint.Write(filepath.Join(opts.StateDir, StateFile), f); err != nil {
		t.Fatal(err)
	}
	if _, err := New(opts); err == nil {
		t.Errorf("New accepted a machine state with a null node")
	}
}
