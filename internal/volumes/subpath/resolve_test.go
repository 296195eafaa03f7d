package subpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// volume makes a volume directory with what a container might have planted in it, beside a
// directory standing for the rest of the host.
func volume(t *testing.T) (root, host string) {
	t.Helper()
	base := t.TempDir()
	root, host = filepath.Join(base, "vol"), filepath.Join(base, "host")
	for _, d := range []string{root + "/data/logs", root + "/real", root + "/..2026_11_28", host + "/etc"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{root + "/data/app.conf": "conf", root + "/..2026_11_28/key": "v", host + "/etc/secret": "host secret"}
	for f, content := range files {
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"escape":    "/",                     // ln -s / /vol/escape
		"up":        "..",                    // a relative climb out
		"deep-up":   "data/../../host",       // out through a real directory
		"hostdir":   host,                    // an absolute path outside
		"rel":       "data/logs",             // relative, inside
		"abs":       root + "/data/app.conf", // absolute, inside (as the host names it)
		"chain":     "rel",                   // link to a link inside
		"loop":      "loop",                  // itself
		"data/back": "../real",               // inside, through ..
		"real/out":  "../../host/etc",        // inside, then out
		"dangling":  "newdir",                // to a missing directory inside
		"sneaky":    root + "/../host",       // textually starts with root, then climbs
		"..data":    "..2026_11_28",          // a configMap volume's layout (atomic writer)
		"key":       "..data/key",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root, host
}

// where is the real path of what f holds.
func where(t *testing.T, f *os.File) string {
	t.Helper()
	p, err := os.Readlink(fdPath(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Paths that stay inside the volume resolve to what they name there, symlinks that stay
// inside included, as upstream allows; every way out is refused, and nothing is made outside.
func TestOpen(t *testing.T) {
	root, host := volume(t)
	for _, tc := range []struct {
		path  string
		want  string // relative to root; "" with err
		err   error
		mkdir bool
	}{
		{path: "data", want: "data"},
		{path: "data/app.conf", want: "data/app.conf"},
		{path: "./data//logs/", want: "data/logs"},
		{path: "rel", want: "data/logs"},
		{path: "chain", want: "data/logs"},
		{path: "abs", want: "data/app.conf"},
		{path: "data/back", want: "real"},
		{path: "rel/../app.conf", want: "data/app.conf"},
		{path: "key", want: "..2026_11_28/key"},
		{path: "escape", err: ErrOutside},
		{path: "escape/etc", err: ErrOutside},
		{path: "up", err: ErrOutside},
		{path: "deep-up/etc", err: ErrOutside},
		{path: "hostdir", err: ErrOutside},
		{path: "real/out", err: ErrOutside},
		{path: "sneaky/etc", err: ErrOutside},
		{path: "..", err: ErrOutside},
		{path: "data/../..", err: ErrOutside},
		{path: "escape/newdir", err: ErrOutside, mkdir: true},
		{path: "hostdir/newdir", err: ErrOutside, mkdir: true},
		{path: "loop", err: unix.ELOOP},
		{path: "data/app.conf/x", err: unix.ENOTDIR},
		{path: "data/app.conf/", err: unix.ENOTDIR},
		{path: "missing", err: unix.ENOENT},
		{path: "dangling", err: unix.ENOENT},
		{path: "new/a/b", want: "new/a/b", mkdir: true},
		{path: "dangling/x", want: "newdir/x", mkdir: true},
	} {
		f, err := Open(root, tc.path, tc.mkdir)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Open(%q) = %v, want %v", tc.path, err, tc.err)
			}
			if err == nil {
				f.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("Open(%q): %v", tc.path, err)
			continue
		}
		if got := where(t, f); got != filepath.Join(root, tc.want) {
			t.Errorf("Open(%q) resolved to %s, want %s", tc.path, got, filepath.Join(root, tc.want))
		}
		f.Close()
	}
	if _, err := os.Lstat(filepath.Join(host, "newdir")); !os.IsNotExist(err) {
		t.Errorf("a directory was made outside the volume: %v", err)
	}
	if _, err := os.Lstat("/newdir"); !os.IsNotExist(err) {
		t.Errorf("a directory was made at the host's /: %v", err)
	}
}

// Directories made for a subPath take the volume root's permission bits whatever the umask,
// each of them (an emptyDir's 0777 as a host directory's 0750), and a read-only walk makes none.
func TestOpenMakesDirectoriesWithTheRootsMode(t *testing.T) {
	root, _ := volume(t)
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	for _, mode := range []os.FileMode{0o750, 0o777, 0o700} {
		if err := os.Chmod(root, mode); err != nil {
			t.Fatal(err)
		}
		top := fmt.Sprintf("m%o", mode)
		f, err := Open(root, top+"/b", true)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		for _, d := range []string{top, top + "/b"} {
			st, err := os.Stat(filepath.Join(root, d))
			if err != nil || st.Mode().Perm() != mode {
				t.Errorf("%s: %v %v, want mode %o", d, st.Mode(), err, mode)
			}
		}
	}
	if _, err := Open(root, "c", false); !errors.Is(err, unix.ENOENT) {
		t.Errorf("read-only Open of a missing path: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "c")); !os.IsNotExist(err) {
		t.Errorf("read-only Open made c: %v", err)
	}
}

// The descriptor Open returns is what was resolved at that moment: swapping the path for a
// symlink afterwards changes nothing about it.
func TestOpenHoldsWhatItResolved(t *testing.T) {
	root, _ := volume(t)
	f, err := Open(root, "data", false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(filepath.Join(root, "data"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(root, "data")); err != nil {
		t.Fatal(err)
	}
	if got := where(t, f); got != filepath.Join(root, "moved") {
		t.Errorf("descriptor now at %s, want the moved directory", got)
	}
}

// FuzzSubPathOpen resolves arbitrary subPaths in a volume full of planted links: whatever
// resolves must lie inside the volume, and no directory may appear outside it.
func FuzzSubPathOpen(f *testing.F) {
	for _, seed := range []string{
		"", ".", "data", "escape", "escape/etc", "up", "up/up", "deep-up/etc", "hostdir/x", "rel",
		"chain/../app.conf", "abs", "abs/x", "loop", "data/back/../data", "real/out", "sneaky/etc",
		"dangling/x", "new/a/b", "../vol/data", "data/../../vol/data", "a/./b//c/",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, path string, mkdir bool) {
		if strings.ContainsRune(path, 0) {
			return
		}
		root, host := volume(t)
		hostBefore := tree(t, host)
		file, err := Open(root, path, mkdir)
		if err == nil {
			got := where(t, file)
			file.Close()
			if got != root && !strings.HasPrefix(got, root+"/") {
				t.Fatalf("Open(%q) resolved to %s, outside %s", path, got, root)
			}
		}
		if after := tree(t, host); after != hostBefore {
			t.Fatalf("Open(%q) changed the host: %s, was %s", path, after, hostBefore)
		}
		if entries, _ := os.ReadDir(filepath.Dir(root)); len(entries) != 2 {
			t.Fatalf("Open(%q) made something beside the volume: %v", path, entries)
		}
	})
}

// tree lists what is under dir.
func tree(t *testing.T, dir string) string {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		b.WriteString(p + "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
