package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("content %q, %v; want new", got, err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the target", len(entries))
	}
}

func TestWriteFileFailureKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory in the target's place makes the rename fail after the temporary is written.
	bad := filepath.Join(dir, "sub")
	if err := os.MkdirAll(filepath.Join(bad, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(bad, []byte("new"), 0o644); err == nil {
		t.Fatal("writing over a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries after a failed write, want 2 (no temporary left)", len(entries))
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("unrelated file changed: %q", got)
	}
}

func TestSweepTempsRemovesOnlyWriteFilesTemporaries(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	temps := []string{".state.json.tmp-123", ".cpu_manager_state.tmp-9"}
	others := []string{"state.json", ".hidden", "state.tmp-1", ".state.tmp-", ".state.tmp-12a", "kubelet-client.key.tmp", ".tmp-1", "..tmp-1"}
	for _, n := range append(append([]string{}, temps...), others...) {
		write(n)
	}
	if err := os.Mkdir(filepath.Join(dir, ".dir.tmp-4"), 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, ".link.tmp-5")); err != nil {
		t.Fatal(err)
	}
	// A real leftover: WriteFile's own name for its temporary.
	tmp, err := os.CreateTemp(dir, ".real"+tempMarker+"*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	temps = append(temps, filepath.Base(tmp.Name()))

	removed, err := SweepTemps(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != len(temps) {
		t.Errorf("removed %q, want %q", removed, temps)
	}
	for _, n := range temps {
		if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s not removed", n)
		}
	}
	for _, n := range append(others, ".dir.tmp-4", ".link.tmp-5") {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("link target removed: %v", err)
	}
	if _, err := SweepTemps(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("missing directory: %v", err)
	}
}
