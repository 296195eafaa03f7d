package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
)

// Checkpoints (cpu_manager_state, memory_manager_state, kubelet_internal_checkpoint) are
// written 0600, as upstream's checkpoint store, also over an older, wider file.
func TestWriteIsOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu_manager_state")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, map[string]string{"policyName": "none"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode %#o, want 0600", got)
	}
	var back map[string]string
	if found, err := Read(path, &back); !found || err != nil || back["policyName"] != "none" {
		t.Errorf("Read = %v, %v, %v", back, found, err)
	}
}
