// Package testutil holds what the package tests and the end-to-end suite share: waiting until a
// condition holds, with the test failed when it does not in time, and running a component for
// the length of a test.
package testutil

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// T is the part of testing.TB the helpers use.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// eventuallyTimeout bounds a wait for something the test's own fakes make happen promptly; it
// is generous because the tests run under -race on a shared machine.
const eventuallyTimeout = 15 * time.Second

// Eventually waits until cond holds, checking every 10 ms, and fails the test if 15 s pass
// first. It is for conditions on the test's own objects and fakes.
func Eventually(t T, what string, cond func() bool) {
	t.Helper()
	poll(t, 10*time.Millisecond, eventuallyTimeout, what, func() (bool, string) { return cond(), "" })
}

// WaitFor waits until cond holds, checking every 100 ms, and fails the test if timeout passes
// first, with the reason cond last gave for not holding. It is for conditions on real
// components (the runtime, the API server, a nodelet process), which cost a call to check.
func WaitFor(t T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	poll(t, 100*time.Millisecond, timeout, what, cond)
}

// WaitUntil is WaitFor for a condition that gives no reason.
func WaitUntil(t T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, 100*time.Millisecond, timeout, what, func() (bool, string) { return cond(), "" })
}

func poll(t T, interval, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		ok, reason := cond()
		last = reason
		return ok, nil
	})
	if err == nil {
		return
	}
	if last != "" {
		t.Fatalf("timed out after %v waiting for %s (last: %s)", timeout, what, last)
	}
	t.Fatalf("timed out after %v waiting for %s", timeout, what)
}
