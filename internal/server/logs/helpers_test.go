package logs

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	pollInterval = 5 * time.Millisecond
	runningCheckPeriod = 10 * time.Millisecond
	os.Exit(m.Run())
}

// base is the timestamp of the first test log entry; entry i is i seconds later.
var base = time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)

// criLine formats one CRI log entry i seconds after base.
func criLine(i int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", base.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
}

func writeFile(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reading test.
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
