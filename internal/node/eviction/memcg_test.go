package eviction

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// fakeMemcg is a directory with the two files a memory threshold is registered through.
func fakeMemcg(t *testing.T) string {
	dir := t.TempDir()
	for _, f := range []string{"memory.usage_in_bytes", "cgroup.event_control"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newMemcgManager is a manager with a hard memory threshold registered in the memory cgroup
// dir, reading a node that uses usage bytes of memory (a 5Gi working set of 8Gi).
func newMemcgManager(t *testing.T, dir string, usage *uint64) *env {
	t.Helper()
	e := newEnv(t, Config{Hard: map[string]string{"memory.available": "1Gi", "nodefs.available": "10%"}, KernelMemcgNotification: true},
		func(d *Deps) { d.MemoryCgroups = map[Signal]string{MemoryAvailable: dir} })
	e.sum.memAvail, e.sum.memWorking, e.sum.memUsage = 3<<30, 5<<30, usage
	return e
}

// registeredThreshold is the threshold of the last registration written to dir.
func registeredThreshold(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.event_control"))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 3 {
		t.Fatalf("cgroup.event_control holds %q, want \"<eventfd> <usage fd> <threshold>\"", b)
	}
	v, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The registered usage is where the working set reaches the threshold: capacity minus the
// threshold plus the inactive file pages, moved as those change.
func TestMemcgThresholdFollowsInactiveFile(t *testing.T) {
	dir := fakeMemcg(t)
	usage := uint64(5<<30 + 512*mi)
	m := newMemcgManager(t, dir, &usage).m
	if len(m.notifiers) != 1 {
		t.Fatalf("%d notifiers, want one, for the memory threshold only", len(m.notifiers))
	}
	defer m.stopNotifiers()

	m.Synchronize(context.Background())
	if got, want := registeredThreshold(t, dir), int64(8<<30-1<<30+512*mi); got != want {
		t.Errorf("registered usage %d, want %d (8Gi capacity - 1Gi threshold + 512Mi inactive)", got, want)
	}
	usage = 5<<30 + 100*mi
	m.Synchronize(context.Background())
	if got, want := registeredThreshold(t, dir), int64(7<<30+100*mi); got != want {
		t.Errorf("after the inactive pages shrank: registered usage %d, want %d", got, want)
	}
}

// A crossing the kernel signals starts a cycle at once, not at the next poll; Run joins the
// watch when it ends.
func TestMemcgSignalStartsCycle(t *testing.T) {
	dir := fakeMemcg(t)
	usage := uint64(5 << 30)
	e := newMemcgManager(t, dir, &usage)
	m, sum := e.m, e.sum
	sum.reads = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	waitRead(t, sum, "the first cycle")

	var n *memcgNotifier
	for _, only := range m.notifiers { // the memory threshold's
		n = only
	}
	var event *os.File
	testutil.Eventually(t, "an eventfd registered after the first cycle's read", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		event = n.event
		return event != nil
	})
	// What the kernel does on a crossing: add to the eventfd's counter.
	if _, err := event.Write(binary.NativeEndian.AppendUint64(nil, 1)); err != nil {
		t.Fatal(err)
	}
	waitRead(t, sum, "a cycle after the signal, with the poll's clock standing still")

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n.event != nil {
		t.Error("the registration outlived Run")
	}
}

func waitRead(t *testing.T, sum *fakeSummary, what string) {
	t.Helper()
	select {
	case <-sum.reads:
	case <-time.After(5 * time.Second):
		t.Fatalf("no summary read within 5s: want %s", what)
	}
}

// TestHostMemcgThreshold registers a threshold on a memory cgroup of the host's cgroupfs and
// charges the cgroup past it (a tmpfs file written from inside it): the kernel signals. It
// needs root and cgroup v1.
func TestHostMemcgThreshold(t *testing.T) {
	const memRoot = "/sys/fs/cgroup/memory"
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat(filepath.Join(memRoot, "cgroup.event_control")); err != nil {
		t.Skip("needs cgroup v1's memory controller")
	}
	suffix := make([]byte, 6)
	rand.Read(suffix)
	name := "nodelet-memcg-test-" + hex.EncodeToString(suffix)
	dir := filepath.Join(memRoot, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shm := filepath.Join("/dev/shm", name)
	t.Cleanup(func() {
		os.Remove(shm)
		if err := os.Remove(dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})

	wake := make(chan struct{}, 1)
	n := &memcgNotifier{dir: dir, wake: wake}
	defer n.stop()
	if err := n.set(4 * mi); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Fatal("signalled before the cgroup used any memory")
	case <-time.After(200 * time.Millisecond):
	}
	// tmpfs pages stay charged to the cgroup of the process that wrote them.
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && head -c %d /dev/zero > %s", dir, 8*mi, shm)
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("charging the cgroup: %v: %s", err, out)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		usage, _ := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
		t.Fatalf("no signal within 10s; the cgroup uses %s bytes against a 4 MiB threshold", strings.TrimSpace(string(usage)))
	}
}
