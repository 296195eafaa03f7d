package testutil

import (
	"os"
	"testing"
)

// ShortDir is a fresh directory under /tmp, removed when the test ends, whose unix socket
// paths stay within the 108-byte limit that t.TempDir's long names can pass.
func ShortDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
