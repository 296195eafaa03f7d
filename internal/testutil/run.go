package testutil

import (
	"context"
	"testing"
)

// Start runs a component's Run(ctx) error in the background until the test ends; the test's cleanup cancels its
// context, waits for it to return and fails the test on an error.
func Start(t testing.TB, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
