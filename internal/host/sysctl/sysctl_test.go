package sysctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fakeProcSys(t *testing.T, values map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, v := range values {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func value(t *testing.T, root, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

var settings = []Setting{{"vm/overcommit_memory", 1}, {"kernel/panic", 10}}

func TestEnsureRewritesDifferingValues(t *testing.T) {
	root := fakeProcSys(t, map[string]string{"vm/overcommit_memory": "0", "kernel/panic": "10"})
	if err := Ensure(root, settings, false); err != nil {
		t.Fatal(err)
	}
	if got := value(t, root, "vm/overcommit_memory"); got != "1" {
		t.Errorf("overcommit_memory = %s, want 1", got)
	}
	if got := value(t, root, "kernel/panic"); got != "10" {
		t.Errorf("panic = %s, want 10", got)
	}
}

func TestProtectReportsEveryDifferenceAndChangesNothing(t *testing.T) {
	root := fakeProcSys(t, map[string]string{"vm/overcommit_memory": "0", "kernel/panic": "1"})
	err := Ensure(root, settings, true)
	if err == nil {
		t.Fatal("no error with protect and two differing values")
	}
	for _, want := range []string{
		"invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0",
		"invalid kernel flag: kernel/panic, expected value: 10, actual value: 1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := value(t, root, "vm/overcommit_memory"); got != "0" {
		t.Errorf("protect changed overcommit_memory to %s", got)
	}
}

func TestMissingTunableIsAnError(t *testing.T) {
	root := fakeProcSys(t, map[string]string{"vm/overcommit_memory": "1"})
	err := Ensure(root, settings, false)
	if err == nil || !strings.Contains(err.Error(), "kernel/panic") {
		t.Fatalf("missing kernel/panic: err = %v", err)
	}
}

func TestNormalize(t *testing.T) {
	// A "." inside a slash-separated component (a VLAN interface) becomes "/".
	if got := Normalize("net/ipv4/conf/eno2.100/rp_filter"); got != "net.ipv4.conf.eno2/100.rp_filter" {
		t.Errorf("Normalize(slashes) = %q", got)
	}
	if got := Normalize("kernel/shm_rmid_forced"); got != "kernel.shm_rmid_forced" {
		t.Errorf("Normalize(kernel/shm_rmid_forced) = %q", got)
	}
	if got := Normalize("kernel.shm_rmid_forced"); got != "kernel.shm_rmid_forced" {
		t.Errorf("the dotted form changed: %q", got)
	}
}
