package cm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hierarchy is one mounted cgroup tree under the cgroup root directory.
type hierarchy struct {
	dir string // mount point, e.g. /sys/fs/cgroup/memory (v1) or /sys/fs/cgroup (v2)
	// controllers are the v1 controllers bound to the tree; empty for named trees
	// (name=systemd) and for the v2 tree of a hybrid host.
	controllers map[string]bool
	v2          bool
}

func (h hierarchy) has(controller string) bool {
	return h.v2 || h.controllers[controller]
}

// v1Controllers are the controllers a v1 tree may be named after; pod cgroups are made in
// every such tree that is mounted, as the runtime makes container cgroups in all of them.
var v1Controllers = map[string]bool{
	"cpu": true, "cpuacct": true, "cpuset": true, "memory": true, "pids": true, "blkio": true,
	"devices": true, "freezer": true, "hugetlb": true, "net_cls": true, "net_prio": true,
	"perf_event": true, "rdma": true, "misc": true,
}

// requiredV1 must be mounted for pod cgroups to mean anything.
var requiredV1 = []string{"cpu", "cpuacct", "cpuset", "memory"}

// wantedV2 are enabled for the kubepods subtree when the kernel offers them.
var wantedV2 = []string{"cpu", "cpuset", "memory", "pids", "io", "hugetlb"}

// discover finds the hierarchies under root. It returns the ones pod cgroups are made in and
// all of them (where pod cgroups are removed from: runc also makes container paths in the
// name=systemd tree and in the v2 tree of a hybrid host).
func discover(root string) (create, all []hierarchy, err error) {
	if isFile(filepath.Join(root, "cgroup.controllers")) {
		h := hierarchy{dir: root, v2: true}
		return []hierarchy{h}, []hierarchy{h}, checkV2(root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("reading cgroup mounts: %w", err)
	}
	byTarget := map[string]*hierarchy{}
	var order []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		target, err := filepath.EvalSymlinks(dir)
		if err != nil || !isFile(filepath.Join(target, "cgroup.procs")) {
			continue // not a mounted hierarchy
		}
		h, seen := byTarget[target]
		if !seen {
			h = &hierarchy{dir: target, controllers: map[string]bool{}, v2: isFile(filepath.Join(target, "cgroup.controllers"))}
			byTarget[target] = h
			order = append(order, target)
		}
		for _, name := range strings.Split(e.Name(), ",") {
			if v1Controllers[name] && !h.v2 {
				h.controllers[name] = true
			}
		}
	}
	mounted := map[string]bool{}
	for _, target := range order {
		h := *byTarget[target]
		all = append(all, h)
		if len(h.controllers) > 0 {
			create = append(create, h)
		}
		for c := range h.controllers {
			mounted[c] = true
		}
	}
	var missing []string
	for _, c := range requiredV1 {
		if !mounted[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("cgroup controllers %s are not mounted under %s", strings.Join(missing, ", "), root)
	}
	return create, all, nil
}

func checkV2(root string) error {
	available, err := readFields(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return err
	}
	for _, c := range []string{"cpu", "memory"} {
		if !slices.Contains(available, c) {
			return fmt.Errorf("cgroup v2 controller %s is not available under %s", c, root)
		}
	}
	return nil
}

// ensurePath makes cgroup path (absolute, e.g. /kubepods/burstable) in h level by level:
// on v1 a new cpuset cgroup is unusable until it has cpus and mems, and on v2 a child only
// gets the controllers its parent enables for its subtree.
func (m *QOSCgroups) ensurePath(h hierarchy, path string) (string, error) {
	dir := h.dir
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		if part == "" {
			continue
		}
		if h.v2 {
			if err := m.enableSubtree(dir); err != nil {
				return "", err
			}
		}
		dir = filepath.Join(dir, part)
		if err := m.fs.Mkdir(dir); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if !h.v2 && h.controllers["cpuset"] {
			if err := m.inheritCpuset(dir); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

// inheritCpuset copies cpuset.cpus and cpuset.mems from the parent when dir has none.
func (m *QOSCgroups) inheritCpuset(dir string) error {
	for _, name := range []string{"cpuset.cpus", "cpuset.mems"} {
		own, err := m.fs.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(own)) != "" {
			continue
		}
		parent, err := m.fs.ReadFile(filepath.Join(filepath.Dir(dir), name))
		if err != nil {
			return err
		}
		if err := m.write(dir, name, strings.TrimSpace(string(parent))); err != nil {
			return err
		}
	}
	return nil
}

// enableSubtree turns on, for dir's children, the wanted controllers dir has.
func (m *QOSCgroups) enableSubtree(dir string) error {
	available, err := readFields(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	enabled, err := readFields(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	var add []string
	for _, c := range wantedV2 {
		if slices.Contains(available, c) && !slices.Contains(enabled, c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return m.write(dir, "cgroup.subtree_control", strings.Join(add, " "))
}

// removeTree removes cgroup dir and any child cgroups, deepest first. Control files are not
// removed one by one: on cgroupfs they go with their directory. A cgroup that still holds
// processes fails with EBUSY.
func (m *QOSCgroups) removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := m.removeTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := m.fs.Rmdir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing cgroup %s: %w", dir, err)
	}
	return nil
}

func (m *QOSCgroups) write(dir, file, value string) error {
	if err := m.fs.WriteFile(filepath.Join(dir, file), value); err != nil {
		return fmt.Errorf("setting %s=%s: %w", filepath.Join(dir, file), value, err)
	}
	return nil
}

func readFields(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data)), nil
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// filesystem is what the manager does to cgroupfs. The kernel's cgroupfs differs from an
// ordinary directory tree: mkdir populates control files, and rmdir removes them with the
// directory. Tests substitute a fake that behaves the same way on a temporary directory.
type filesystem interface {
	Mkdir(dir string) error
	Rmdir(dir string) error
	ReadFile(file string) ([]byte, error)
	WriteFile(file, value string) error
}

// cgroupFS is the real kernel interface.
type cgroupFS struct{}

func (cgroupFS) Mkdir(dir string) error { return os.Mkdir(dir, 0o755) }

func (cgroupFS) Rmdir(dir string) error { return os.Remove(dir) }

func (cgroupFS) ReadFile(file string) ([]byte, error) { return os.ReadFile(file) }

// WriteFile writes to an existing control file; it never creates one, since a missing file
// means the kernel lacks the setting.
func (cgroupFS) WriteFile(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
