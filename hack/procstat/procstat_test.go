package procstat

import (
	"os"
	"testing"
	"time"
)

func TestRSSOfSelf(t *testing.T) {
	if got := RSSMiB(os.Getpid()); got <= 0 || got > 4096 {
		t.Fatalf("own RSS %.1f MiB is implausible", got)
	}
	if got := RSSMiB(-1); got != 0 {
		t.Fatalf("RSS of a missing process = %.1f, want 0", got)
	}
}

func TestMemorySplitsIntoAnonAndFile(t *testing.T) {
	m := ReadMemory(os.Getpid())
	if m.Anon <= 0 || m.File <= 0 {
		t.Fatalf("anon %.1f / file %.1f MiB: both parts of a Go test binary are resident", m.Anon, m.File)
	}
	if m.Anon+m.File > m.RSS+0.01 {
		t.Fatalf("anon %.1f + file %.1f exceed RSS %.1f", m.Anon, m.File, m.RSS)
	}
}

func TestCPUSecondsOfSelf(t *testing.T) {
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; { // burn a little CPU
	}
	if got := CPUSeconds(os.Getpid()); got <= 0 {
		t.Fatalf("own CPU time %.2f s, want some", got)
	}
	if got := CPUSeconds(-1); got != 0 {
		t.Fatalf("CPU time of a missing process = %.2f, want 0", got)
	}
}
