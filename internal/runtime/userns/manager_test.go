package userns

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func newManager(t *testing.T, dir string) *Manager {
	t.Helper()
	m, err := New(dir, DefaultRange, 110)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Two pods get disjoint whole ranges above the host's own IDs; a pod asking again, or a new
// manager after a restart, gets the same range from the file in its pod directory, written in
// upstream's format; Release frees the range and removes the file.
func TestRangesAreDisjointStableAndReleased(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	a, err := m.Mapping("pod-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Mapping("pod-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Range{a, b} {
		if r.Length != IDsPerPod || r.First < IDsPerPod || r.First%IDsPerPod != 0 {
			t.Fatalf("range %+v: want %d IDs at a multiple of %d, above the host's first %d", r, IDsPerPod, IDsPerPod, IDsPerPod)
		}
	}
	if a.First < b.First+b.Length && b.First < a.First+a.Length {
		t.Fatalf("ranges overlap: %+v %+v", a, b)
	}
	if again, _ := m.Mapping("pod-a"); again != a {
		t.Fatalf("second ask: %+v, want %+v", again, a)
	}
	data, err := os.ReadFile(filepath.Join(dir, "pod-a", MappingsFile))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"uidMappings":[{"hostId":` + itoa(a.First) + `,"containerId":0,"length":65536}],"gidMappings":[{"hostId":` + itoa(a.First) + `,"containerId":0,"length":65536}]}`
	if string(data) != want {
		t.Fatalf("file %s, want %s", data, want)
	}

	restarted := newManager(t, dir)
	if got := restarted.Allocated(); len(got) != 2 || got["pod-a"] != a || got["pod-b"] != b {
		t.Fatalf("after restart: %v, want pod-a %+v pod-b %+v", got, a, b)
	}
	c, err := restarted.Mapping("pod-c")
	if err != nil || c == a || c == b {
		t.Fatalf("new pod after restart: %+v %v; must not reuse a recorded range", c, err)
	}

	restarted.Release("pod-a")
	if _, err := os.Stat(filepath.Join(dir, "pod-a", MappingsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file after release: %v, want gone", err)
	}
	if _, held := restarted.Allocated()["pod-a"]; held {
		t.Fatal("pod-a still holds a range after release")
	}
	if d, _ := restarted.Mapping("pod-d"); d != a {
		t.Fatalf("pod-d got %+v, want the freed range %+v", d, a)
	}
	restarted.Release("never-allocated") // not an error
}

// Concurrent pods never share a range.
func TestConcurrentAllocationsAreDisjoint(t *testing.T) {
	m := newManager(t, t.TempDir())
	var mu sync.Mutex
	seen := map[uint32]types.UID{}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uid := types.UID("pod-" + itoa(uint32(i)))
			r, err := m.Mapping(uid)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if other, dup := seen[r.First]; dup {
				t.Errorf("%s and %s share %d", uid, other, r.First)
			}
			seen[r.First] = uid
		}()
	}
	wg.Wait()
}

// A pod UID that is not one path element (a static pod's author controls it) is refused
// before any path is built from it.
func TestUnsafePodUIDIsRefused(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, filepath.Join(dir, "pods"))
	for _, uid := range []types.UID{"../escape", "a/b", "..", ""} {
		if _, err := m.Mapping(uid); err == nil {
			t.Errorf("uid %q: no error", uid)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("files written outside the pods directory: %v", entries)
	}
}

// A damaged or conflicting file does not stop the start (a node that never ran a hostUsers:
// false pod must not refuse to start over one): only that pod fails, with an error naming the
// file, and it is never given another range, which would leave its files owned by IDs it no
// longer has. The other pods keep their ranges and new ones get free ones.
func TestBadFilesFailOnlyTheirPod(t *testing.T) {
	valid := `{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`
	for name, content := range map[string]string{
		"not json":      "{",
		"two mappings":  `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536},{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`,
		"uid != gid":    `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
		"root unmapped": `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`,
		"host root":     `{"uidMappings":[{"hostId":0,"containerId":0,"length":65536}],"gidMappings":[{"hostId":0,"containerId":0,"length":65536}]}`,
		"short range":   `{"uidMappings":[{"hostId":65536,"containerId":0,"length":1000}],"gidMappings":[{"hostId":65536,"containerId":0,"length":1000}]}`,
		"already held":  valid, // pod-a, read first, holds it
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "pod-a", MappingsFile), valid)
		writeFile(t, filepath.Join(dir, "pod-x", MappingsFile), content)
		m, err := New(dir, DefaultRange, 110)
		if err != nil {
			t.Fatalf("%s: New: %v", name, err)
		}
		if _, err := m.Mapping("pod-x"); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "pod-x", MappingsFile)) {
			t.Errorf("%s: Mapping(pod-x) = %v, want an error naming its file", name, err)
		}
		if r, err := m.Mapping("pod-a"); err != nil || r.First != 131072 {
			t.Errorf("%s: Mapping(pod-a) = %+v, %v; want its recorded range", name, r, err)
		}
		if r, err := m.Mapping("pod-new"); err != nil || r.First == 131072 {
			t.Errorf("%s: Mapping(pod-new) = %+v, %v; want a free range", name, r, err)
		}
		if _, held := m.Allocated()["pod-x"]; held {
			t.Errorf("%s: pod-x holds a range", name)
		}
	}
}

// A full node range frees the ranges of pods whose directory went away behind its back.
func TestFullRangeReclaimsPodsWhoseDirectoryIsGone(t *testing.T) {
	dir := t.TempDir()
	m, err := New(dir, Range{First: 1 << 20, Length: 2 * IDsPerPod}, 2)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Mapping("pod-a")
	if _, err := m.Mapping("pod-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Mapping("pod-c"); err == nil {
		t.Fatal("a third pod got a range of a two-pod node")
	}
	if err := os.RemoveAll(filepath.Join(dir, "pod-a")); err != nil {
		t.Fatal(err)
	}
	if c, err := m.Mapping("pod-c"); err != nil || c != a {
		t.Fatalf("pod-c: %+v %v, want pod-a's freed range %+v", c, err, a)
	}
}

func TestNodeRange(t *testing.T) {
	dir := t.TempDir()
	uid, gid := filepath.Join(dir, "subuid"), filepath.Join(dir, "subgid")
	if r, err := NodeRange(uid, gid); err != nil || r != DefaultRange {
		t.Fatalf("no files: %+v %v, want the default", r, err)
	}
	writeFile(t, uid, "alice:100000:65536\nkubelet:65536:7208960\n")
	writeFile(t, gid, "kubelet:65536:7208960\n")
	if r, err := NodeRange(uid, gid); err != nil || r != (Range{First: 65536, Length: 7208960}) {
		t.Fatalf("kubelet entries: %+v %v", r, err)
	}
	writeFile(t, gid, "kubelet:131072:7208960\n")
	if _, err := NodeRange(uid, gid); err == nil {
		t.Fatal("differing entries accepted")
	}
	for name, r := range map[string]Range{
		"host root":       {First: 0, Length: 1 << 24},
		"not aligned":     {First: 70000, Length: 1 << 24},
		"partial pod":     {First: 1 << 16, Length: 1<<24 + 5},
		"too few for 110": {First: 1 << 16, Length: 100 * IDsPerPod},
	} {
		if _, err := New(dir, r, 110); err == nil {
			t.Errorf("%s: node range %+v accepted", name, r)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
