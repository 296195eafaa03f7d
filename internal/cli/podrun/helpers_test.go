package podrun

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func init() {
	attemptPoll = 10 * time.Millisecond
	stepPoll = 10 * time.Millisecond
	donePoll = 10 * time.Millisecond
	handOffPoll = 10 * time.Millisecond
}

// criLine is one CRI log entry: "<time> <stream> <F|P> <content>".
func criLine(stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, tag, content)
}

// appendLog appends CRI entries to <dir>/<container>/<attempt>.log, as the runtime writes.
func appendLog(t *testing.T, dir, container string, attempt int, entries ...string) {
	t.Helper()
	path := filepath.Join(dir, container, fmt.Sprintf("%d.log", attempt))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(entries, "")); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the streamer's and the test's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) lines() []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
