package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder stands in for a *testing.T: Fatalf records the message and ends the goroutine, as
// the real one does.
type recorder struct {
	mu     sync.Mutex
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f as a test body would, in a goroutine of its own, and returns the failure.
func run(f func(*recorder)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	failed := run(func(r *recorder) {
		Eventually(r, "the third call", func() bool { calls++; return calls == 3 })
	})
	if failed != "" || calls != 3 {
		t.Fatalf("failed %q after %d calls, want success on the third", failed, calls)
	}
}

func TestWaitForFailsWithTheLastReason(t *testing.T) {
	calls := 0
	failed := run(func(r *recorder) {
		WaitFor(r, 250*time.Millisecond, "never", func() (bool, string) {
			calls++
			return false, fmt.Sprintf("call %d", calls)
		})
		r.Fatalf("WaitFor returned")
	})
	want := fmt.Sprintf("waiting for never (last: call %d)", calls)
	if calls < 2 || !strings.HasSuffix(failed, want) {
		t.Fatalf("failure %q after %d calls, want it to end in %q", failed, calls, want)
	}
}

func TestWaitForWithoutAReason(t *testing.T) {
	failed := run(func(r *recorder) {
		WaitFor(r, 150*time.Millisecond, "nothing", func() (bool, string) { return false, "" })
	})
	if !strings.HasSuffix(failed, "waiting for nothing") {
		t.Fatalf("failure %q, want it to end in %q", failed, "waiting for nothing")
	}
}

func TestWaitUntilFailsNamingWhatItWaitedFor(t *testing.T) {
	calls := 0
	failed := run(func(r *recorder) {
		WaitUntil(r, 250*time.Millisecond, "a condition that never holds", func() bool { calls++; return false })
	})
	if calls < 2 || !strings.HasSuffix(failed, "waiting for a condition that never holds") {
		t.Fatalf("failure %q after %d calls, want a timeout naming the condition", failed, calls)
	}
}
