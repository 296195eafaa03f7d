package logs

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// fakeLogRuntime plays the runtime's part of rotation: reopening creates a new live file.
type fakeLogRuntime struct {
	containers []*container.ContainerLog
	reopened   []string
	reopenErr  error
}

func (f *fakeLogRuntime) RunningContainerLogs(context.Context) ([]*container.ContainerLog, error) {
	return f.containers, nil
}

func (f *fakeLogRuntime) ReopenContainerLog(_ context.Context, id string) error {
	f.reopened = append(f.reopened, id)
	if f.reopenErr != nil {
		return f.reopenErr
	}
	for _, c := range f.containers {
		if c.ContainerID == id {
			return os.WriteFile(c.Path, nil, 0o640)
		}
	}
	return container.ErrContainerNotFound
}

type rotateEnv struct {
	t       *testing.T
	dir     string
	rt      *fakeLogRuntime
	rotator *Rotator
	clock   time.Time
}

func newRotateEnv(t *testing.T, maxFiles int) *rotateEnv {
	dir := t.TempDir()
	e := &rotateEnv{t: t, dir: dir, clock: time.Date(2024, 5, 1, 12, 0, 0, 0, time.Local)}
	e.rt = &fakeLogRuntime{containers: []*container.ContainerLog{
		{ContainerID: "big", Path: filepath.Join(dir, "big", "0.log"), State: container.StateRunning},
		{ContainerID: "small", Path: filepath.Join(dir, "small", "0.log"), State: container.StateRunning},
		{ContainerID: "nolog", State: container.StateRunning},
	}}
	for _, c := range e.rt.containers[:2] {
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewRotator(RotatorOptions{MaxSize: 200, MaxFiles: maxFiles, Runtime: e.rt})
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time { return e.clock }
	e.rotator = r
	return e
}

// round fills the live files (big past MaxSize, small under it for four rounds) and runs one check, a
// minute after the previous one.
func (e *rotateEnv) round(i int) {
	e.t.Helper()
	appendFile(e.t, e.rt.containers[0].Path, strings.Repeat(criLine(i, "stdout", "F", "0123456789"), 4))
	appendFile(e.t, e.rt.containers[1].Path, criLine(i, "stdout", "F", "x"))
	e.clock = e.clock.Add(time.Minute)
	e.rotator.rotateAll(context.Background())
}

func (e *rotateEnv) files(container string) []string {
	e.t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.dir, container))
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	sort.Strings(names)
	return names
}

func TestRotateRenamesReopensCompressesAndPrunes(t *testing.T) {
	e := newRotateEnv(t, 3)
	e.round(0)
	if got, want := e.files("big"), []string{"0.log", "0.log.20240501-120100"}; !equal(got, want) {
		t.Fatalf("after one rotation: %v, want %v", got, want)
	}
	if len(e.rt.reopened) != 1 || e.rt.reopened[0] != "big" {
		t.Fatalf("reopened %v, want [big]", e.rt.reopened)
	}
	if info, _ := os.Stat(e.rt.containers[0].Path); info.Size() != 0 {
		t.Errorf("live file not fresh: %d bytes", info.Size())
	}
	rotatedData := readFile(t, filepath.Join(e.dir, "big", "0.log.20240501-120100"))

	e.round(1)
	// The older rotated file is compressed, the newest stays plain.
	if got, want := e.files("big"), []string{"0.log", "0.log.20240501-120100.gz", "0.log.20240501-120200"}; !equal(got, want) {
		t.Fatalf("after two rotations: %v, want %v", got, want)
	}
	if got := gunzip(t, filepath.Join(e.dir, "big", "0.log.20240501-120100.gz")); got != rotatedData {
		t.Errorf("compressed content %q, want %q", got, rotatedData)
	}

	e.round(2)
	e.round(3)
	// MaxFiles 3: the live file and two rotated ones, the oldest deleted.
	if got, want := e.files("big"), []string{"0.log", "0.log.20240501-120300.gz", "0.log.20240501-120400"}; !equal(got, want) {
		t.Fatalf("after four rotations: %v, want %v", got, want)
	}
	if got := e.files("small"); !equal(got, []string{"0.log"}) {
		t.Errorf("small log rotated: %v", got)
	}
}

func TestRotateRenamesBackWhenReopenFails(t *testing.T) {
	e := newRotateEnv(t, 5)
	e.rt.reopenErr = errors.New("container is not running")
	e.round(0)
	if got := e.files("big"); !equal(got, []string{"0.log"}) {
		t.Fatalf("files %v, want the live file back in place", got)
	}
	if info, _ := os.Stat(e.rt.containers[0].Path); info.Size() == 0 {
		t.Error("live file lost its content")
	}
	// The next round retries and succeeds.
	e.rt.reopenErr = nil
	e.round(1)
	if got := e.files("big"); len(got) != 2 || len(e.rt.reopened) != 2 {
		t.Fatalf("retry: files %v, reopened %v", got, e.rt.reopened)
	}
}

func TestRotateCleansLeftoversAndReopensMissingFile(t *testing.T) {
	e := newRotateEnv(t, 5)
	dir := filepath.Join(e.dir, "big")
	writeFile(t, filepath.Join(dir, "0.log.20240101-000000"), "plain")
	writeFile(t, filepath.Join(dir, "0.log.20240101-000000.gz"), "")
	writeFile(t, filepath.Join(dir, "0.log.20240102-000000.gz.tmp"), "")
	writeFile(t, filepath.Join(dir, "1.log"), "another instance")
	e.round(0)
	want := []string{"0.log", "0.log.20240101-000000.gz", "0.log.20240501-120100", "1.log"}
	if got := e.files("big"); !equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}

	// A missing live file (lost between rename and reopen) is recreated by a reopen.
	os.Remove(e.rt.containers[1].Path)
	e.rt.reopened = nil
	e.rotator.rotateAll(context.Background())
	if len(e.rt.reopened) != 1 || e.rt.reopened[0] != "small" {
		t.Errorf("reopened %v, want [small]", e.rt.reopened)
	}
}

func TestNewRotatorOptions(t *testing.T) {
	r, err := NewRotator(RotatorOptions{Runtime: &fakeLogRuntime{}})
	if err != nil || r.maxSize != DefaultMaxSize || r.maxFiles != DefaultMaxFiles || r.interval != DefaultInterval {
		t.Errorf("defaults: %+v, %v", r, err)
	}
	if _, err := NewRotator(RotatorOptions{Runtime: &fakeLogRuntime{}, MaxFiles: 1}); err == nil {
		t.Error("MaxFiles 1 accepted")
	}
	if _, err := NewRotator(RotatorOptions{}); err == nil {
		t.Error("no runtime accepted")
	}
	if n, err := ParseMaxSize("2Ki"); err != nil || n != 2048 {
		t.Errorf("ParseMaxSize(2Ki) = %d, %v", n, err)
	}
	if n, err := ParseMaxSize(""); err != nil || n != DefaultMaxSize {
		t.Errorf("ParseMaxSize(\"\") = %d, %v", n, err)
	}
	if _, err := ParseMaxSize("lots"); err == nil {
		t.Error("ParseMaxSize(lots) accepted")
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func equal(a, b []string) bool {
	return strings.Join(a, "|") == strings.Join(b, "|")
}
