package runtime

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func gidOf(t *testing.T, path string) (uint32, os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Gid, st.Mode()
}

// With fsGroup an emptyDir and what is in it belong to the group, the directories setgid so
// new files inherit it; without, the directory is only world-writable.
func TestEmptyDirTakesTheFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary one needs root")
	}
	dir := filepath.Join(t.TempDir(), "vol")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	group := int64(4321)
	if err := prepareEmptyDir(dir, &group); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "sub"), filepath.Join(dir, "sub", "f")} {
		gid, mode := gidOf(t, p)
		if gid != 4321 || mode&0o060 != 0o060 {
			t.Errorf("%s: gid %d mode %v, want group 4321 with read/write", p, gid, mode)
		}
		if mode.IsDir() && mode&os.ModeSetgid == 0 {
			t.Errorf("%s: directory without setgid", p)
		}
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := prepareEmptyDir(plain, nil); err != nil {
		t.Fatal(err)
	}
	if _, mode := gidOf(t, plain); mode.Perm() != 0o777 || mode&os.ModeSetgid != 0 {
		t.Errorf("without fsGroup: mode %v, want 0777", mode)
	}
}
