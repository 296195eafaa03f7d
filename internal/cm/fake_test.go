package cm

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/opencontainers/cgroups"
)

// fakeCgroupFS emulates cgroupfs on a temporary directory: mkdir populates the new cgroup's
// control files, writes only go to existing files, and rmdir takes the control files with
// the directory but fails with EBUSY while the cgroup has child cgroups or processes.
type fakeCgroupFS struct {
	root string
	v2   bool
	// v1Files maps a v1 mount's directory name to the control files a new cgroup in it gets.
	v1Files map[string]map[string]string
}

// newFakeV1 lays out a hybrid v1 host: cpu and cpuacct co-mounted (with the usual
// symlinks), cpuset, memory, pids, the named systemd tree and the v2 tree at unified.
func newFakeV1(t *testing.T) *fakeCgroupFS {
	t.Helper()
	libraryTestMode(t)
	f := &fakeCgroupFS{root: t.TempDir(), v1Files: map[string]map[string]string{
		"cpu,cpuacct": {"cpu.shares": "1024", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "-1", "cpuacct.usage": "0"},
		"cpuset":      {"cpuset.cpus": "", "cpuset.mems": ""},
		"memory":      {"memory.limit_in_bytes": "9223372036854771712"},
		"pids":        {"pids.max": "max"},
		"systemd":     {},
		"unified":     {"cgroup.controllers": "", "cgroup.subtree_control": ""},
	}}
	rootFiles := map[string]map[string]string{
		"cpu,cpuacct": f.v1Files["cpu,cpuacct"],
		"cpuset":      {"cpuset.cpus": "0-3\n", "cpuset.mems": "0\n"},
		"memory":      f.v1Files["memory"],
		"pids":        {},
		"systemd":     {},
		"unified":     {"cgroup.controllers": "hugetlb\n", "cgroup.subtree_control": ""},
	}
	for name, files := range rootFiles {
		f.writeAll(t, filepath.Join(f.root, name), files)
	}
	for _, link := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(f.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(f.root, "not-a-mount"), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// newFakeV2 lays out a unified v2 host.
func newFakeV2(t *testing.T) *fakeCgroupFS {
	t.Helper()
	libraryTestMode(t)
	f := &fakeCgroupFS{root: t.TempDir(), v2: true}
	f.writeAll(t, f.root, map[string]string{
		"cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.subtree_control": "",
	})
	return f
}

// libraryTestMode lets runc's cgroup library write to a fake tree: it then skips its check
// that a file is on cgroupfs.
func libraryTestMode(t *testing.T) {
	cgroups.TestMode = true
	t.Cleanup(func() { cgroups.TestMode = false })
}

func (f *fakeCgroupFS) writeAll(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files = maps.Clone(files)
	files["cgroup.procs"] = ""
	if err := writeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
}

func writeFiles(dir string, files map[string]string) error {
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeCgroupFS) Mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{"cgroup.procs": ""}
	if f.v2 {
		enabled, err := readFields(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"))
		if err != nil {
			return err
		}
		files["cgroup.controllers"] = strings.Join(enabled, " ")
		files["cgroup.subtree_control"] = ""
		for _, c := range enabled {
			maps.Copy(files, v2Files[c])
		}
	} else {
		rel, err := filepath.Rel(f.root, dir)
		if err != nil {
			return err
		}
		maps.Copy(files, f.v1Files[strings.Split(rel, string(filepath.Separator))[0]])
	}
	return writeFiles(dir, files)
}

var v2Files = map[string]map[string]string{
	"cpu":    {"cpu.weight": "100", "cpu.max": "max 100000"},
	"memory": {"memory.max": "max"},
	"pids":   {"pids.max": "max"},
	"cpuset": {"cpuset.cpus": "", "cpuset.mems": ""},
}

func (f *fakeCgroupFS) Rmdir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	busy := &fs.PathError{Op: "rmdir", Path: dir, Err: syscall.EBUSY}
	for _, e := range entries {
		if e.IsDir() {
			return busy
		}
	}
	if procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); len(procs) > 0 {
		return busy
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return os.Remove(dir)
}

func (f *fakeCgroupFS) ReadFile(file string) ([]byte, error) { return os.ReadFile(file) }

// WriteFile writes existing files only; cgroup.subtree_control takes "+name" edits.
func (f *fakeCgroupFS) WriteFile(file, value string) error {
	if filepath.Base(file) != "cgroup.subtree_control" {
		return cgroupFS{}.WriteFile(file, value)
	}
	enabled, err := readFields(file)
	if err != nil {
		return err
	}
	for _, edit := range strings.Fields(value) {
		if c, ok := strings.CutPrefix(edit, "+"); ok && !slices.Contains(enabled, c) {
			enabled = append(enabled, c)
		}
	}
	return cgroupFS{}.WriteFile(file, strings.Join(enabled, " "))
}

// addProcess puts a pretend process in the cgroup at dir.
func addProcess(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// clearProcesses lets the pretend processes of the cgroup at dir exit.
func clearProcesses(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
