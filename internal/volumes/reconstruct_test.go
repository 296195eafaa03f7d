package volumes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// After a restart the volumes under the root dir are known: a pod that is still wanted finds
// its volume as it was (SetUp runs once and keeps what is there), the volume of a pod that
// went away is torn down once its containers are gone, and what no plugin owns is left alone.
func TestReconstructionFromTheRootDir(t *testing.T) {
	root := t.TempDir()
	kept := filepath.Join(root, "pods", "u1", "volumes", fakePluginName, "data")
	leaked := filepath.Join(root, "pods", "gone", "volumes", fakePluginName, "old")
	foreign := filepath.Join(root, "pods", "gone", "volumes", "example.com~other", "v")
	for _, d := range []string{kept, leaked, foreign} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(kept, "state"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, root)
	if n := len(e.m.actual.all()); n != 2 {
		t.Fatalf("reconstructed %d volumes, want 2: %v", n, e.m.actual.all())
	}
	e.reconcile()
	if got := e.plugin.tornDown(); len(got) != 0 {
		t.Fatalf("torn down %v before the pods' containers were known to be gone", got)
	}
	pod := podWith("u1", "data")
	e.m.want(t.Context(), pod)
	e.pods.setGone("gone")
	e.reconcile()
	if _, _, err := e.m.HostPath(pod, "data"); err != nil || e.plugin.setUpsOf("data") != 1 {
		t.Errorf("kept volume: %v after %d SetUps, want usable after one", err, e.plugin.setUpsOf("data"))
	}
	if data, err := os.ReadFile(filepath.Join(kept, "state")); err != nil || string(data) != "x" {
		t.Errorf("kept volume's content: %q, %v", data, err)
	}
	if got := e.plugin.tornDown(); !slices.Equal(got, []string{leaked}) {
		t.Errorf("torn down %v, want only %s", got, leaked)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("another plugin's volume: %v", err)
	}
	if err := e.m.RemovePodDir("u1"); err == nil || !strings.Contains(err.Error(), "still has 1 volumes set up") {
		t.Errorf("RemovePodDir of a pod with a volume: %v", err)
	}
	if err := e.m.RemovePodDir("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", "gone")); !os.IsNotExist(err) {
		t.Errorf("pod directory left: %v", err)
	}
}
