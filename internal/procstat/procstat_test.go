package procstat

import (
	"os"
	"testing"
)

func TestRSSOfSelf(t *testing.T) {
	if got := RSSMiB(os.Getpid()); got <= 0 || got > 4096 {
		t.Fatalf("own RSS %.1f MiB is implausible", got)
	}
	if got := RSSMiB(-1); got != 0 {
		t.Fatalf("RSS of a missing process = %.1f, want 0", got)
	}
}
