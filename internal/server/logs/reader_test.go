package logs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// sampleLog has three output lines on stdout, one of them split in partial entries, and
// one stderr line: "one", "two-a two-b", "err", "three".
func sampleLog(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path,
		criLine(0, "stdout", "F", "one"),
		criLine(1, "stdout", "P", "two-a "),
		criLine(2, "stdout", "F", "two-b"),
		criLine(3, "stderr", "F", "err"),
		criLine(4, "stdout", "F", "three"),
	)
	return path
}

func readAll(t *testing.T, path string, opts Options) string {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out strings.Builder
	if err := r.Copy(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestReadWholeFileJoinsPartials(t *testing.T) {
	got := readAll(t, sampleLog(t), Options{TailLines: -1})
	if want := "one\ntwo-a two-b\nerr\nthree\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReadTailCountsJoinedLines(t *testing.T) {
	path := sampleLog(t)
	for _, tc := range []struct {
		tail int64
		want string
	}{
		{0, ""},
		{1, "three\n"},
		{2, "err\nthree\n"},
		{3, "two-a two-b\nerr\nthree\n"},
		{4, "one\ntwo-a two-b\nerr\nthree\n"},
		{100, "one\ntwo-a two-b\nerr\nthree\n"},
	} {
		if got := readAll(t, path, Options{TailLines: tc.tail}); got != tc.want {
			t.Errorf("tail %d: got %q, want %q", tc.tail, got, tc.want)
		}
	}
	// A line still being written at the end counts as a line.
	appendFile(t, path, criLine(5, "stdout", "P", "four-a"), criLine(6, "stdout", "P", "four-b"))
	if got, want := readAll(t, path, Options{TailLines: 2}), "three\nfour-afour-b"; got != want {
		t.Errorf("tail with unfinished line: got %q, want %q", got, want)
	}
}

func TestReadTailAcrossBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	var lines []string
	long := strings.Repeat("x", 20000) // longer than a tail block
	for i := range 50 {
		lines = append(lines, criLine(i, "stdout", "P", long), criLine(i, "stdout", "F", "end"))
	}
	writeFile(t, path, lines...)
	got := readAll(t, path, Options{TailLines: 3})
	if want := strings.Repeat(long+"end\n", 3); got != want {
		t.Errorf("tail 3 of long lines: got %d bytes, want %d", len(got), len(want))
	}
}

func TestReadSinceTimestampsLimitAndStream(t *testing.T) {
	path := sampleLog(t)
	if got, want := readAll(t, path, Options{TailLines: -1, Since: base.Add(2 * time.Second)}), "two-b\nerr\nthree\n"; got != want {
		t.Errorf("since: got %q, want %q", got, want)
	}
	ts := func(i int) string { return base.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano) }
	want := ts(0) + " one\n" + ts(1) + " two-a two-b\n" + ts(3) + " err\n" + ts(4) + " three\n"
	if got := readAll(t, path, Options{TailLines: -1, Timestamps: true}); got != want {
		t.Errorf("timestamps: got %q, want %q", got, want)
	}
	if got, want := readAll(t, path, Options{TailLines: -1, LimitBytes: 7}), "one\ntwo"; got != want {
		t.Errorf("limitBytes: got %q, want %q", got, want)
	}
	if got, want := readAll(t, path, Options{TailLines: -1, Stream: v1.LogStreamStderr}), "err\n"; got != want {
		t.Errorf("stderr: got %q, want %q", got, want)
	}
	if got, want := readAll(t, path, Options{TailLines: -1, Stream: v1.LogStreamStdout}), "one\ntwo-a two-b\nthree\n"; got != want {
		t.Errorf("stdout: got %q, want %q", got, want)
	}
}

func TestReadSkipsMalformedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, criLine(0, "stdout", "F", "a"), "garbage\n", criLine(1, "stdout", "F", "b"))
	if got, want := readAll(t, path, Options{TailLines: -1}), "a\nb\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOpenMissingFile(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "none.log"), Options{}); err == nil {
		t.Fatal("Open of a missing file succeeded")
	}
}

// follower runs Copy with Follow in the background.
type follower struct {
	out     syncBuffer
	running atomic.Bool
	done    chan error
}

func startFollow(t *testing.T, path string, opts Options) *follower {
	t.Helper()
	f := &follower{done: make(chan error, 1)}
	f.running.Store(true)
	opts.Follow = true
	opts.Running = func(context.Context) (bool, error) { return f.running.Load(), nil }
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer r.Close()
		f.done <- r.Copy(ctx, &f.out)
	}()
	t.Cleanup(cancel)
	return f
}

func (f *follower) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-f.done:
		if err != nil {
			t.Fatalf("Copy: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not stop after the container stopped")
	}
}

func TestFollowSeesAppendedLinesAndStopsWithContainer(t *testing.T) {
	path := sampleLog(t)
	f := startFollow(t, path, Options{TailLines: 1})
	testutil.Eventually(t, "the tail", func() bool { return f.out.String() == "three\n" })

	appendFile(t, path, criLine(5, "stdout", "P", "fo"))
	appendFile(t, path, criLine(6, "stdout", "F", "ur"))
	testutil.Eventually(t, "appended lines", func() bool { return f.out.String() == "three\nfour\n" })

	// Half a line: nothing is written until the rest arrives.
	line := criLine(7, "stdout", "F", "five")
	appendFile(t, path, line[:10])
	time.Sleep(50 * time.Millisecond)
	appendFile(t, path, line[10:])
	testutil.Eventually(t, "the completed line", func() bool { return f.out.String() == "three\nfour\nfive\n" })

	// The container stops after a last line: it is still read, then Copy returns.
	appendFile(t, path, criLine(8, "stderr", "F", "bye"))
	f.running.Store(false)
	f.wait(t)
	if got, want := f.out.String(), "three\nfour\nfive\nbye\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFollowAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, path, criLine(0, "stdout", "F", "1"))
	f := startFollow(t, path, Options{TailLines: -1})
	testutil.Eventually(t, "the first line", func() bool { return f.out.String() == "1\n" })

	// Rotation: the file is renamed, the runtime writes a last line to it before it
	// reopens, then writes to a new file at the path.
	rotated := path + ".20240501-120000"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	appendFile(t, rotated, criLine(1, "stdout", "F", "2"))
	time.Sleep(20 * time.Millisecond) // the follower sees the path missing meanwhile
	writeFile(t, path, criLine(2, "stdout", "F", "3"))
	testutil.Eventually(t, "lines from both files", func() bool { return f.out.String() == "1\n2\n3\n" })

	appendFile(t, path, criLine(3, "stdout", "F", "4"))
	testutil.Eventually(t, "a line appended to the new file", func() bool { return f.out.String() == "1\n2\n3\n4\n" })
	f.running.Store(false)
	f.wait(t)
}

func TestFollowStopsAtContextEnd(t *testing.T) {
	path := sampleLog(t)
	r, err := Open(path, Options{Follow: true, TailLines: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Copy(ctx, &syncBuffer{}) }()
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Copy ignored the cancelled context")
	}
}
