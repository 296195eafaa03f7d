package goroutines

import (
	"context"
	"testing"
)

// Functions given before and while Run runs get Run's context, and Run returns only after
// every one of them returned.
func TestRunStartsEveryFunctionAndJoinsThem(t *testing.T) {
	g := New()
	started := make(chan int, 2)
	var ended [2]bool
	for i := range ended {
		if i == 1 {
			continue
		}
		g.Go(func(ctx context.Context) { started <- i; <-ctx.Done(); ended[i] = true })
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	if i := <-started; i != 0 {
		t.Fatalf("started %d first", i)
	}
	g.Go(func(ctx context.Context) { started <- 1; <-ctx.Done(); ended[1] = true })
	if i := <-started; i != 1 {
		t.Fatalf("started %d, want the function given while Run runs", i)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !ended[0] || !ended[1] {
		t.Errorf("Run returned before its goroutines: ended %v", ended)
	}
}

// A function given after Run returned is not started.
func TestNothingStartsAfterRun(t *testing.T) {
	g := New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Run(ctx); err != nil {
		t.Fatal(err)
	}
	ran := false
	g.Go(func(context.Context) { ran = true })
	if ran {
		t.Error("a function ran without Run")
	}
}

// GoStoppable runs f only when claim wants it, and the stop claim got ends f alone.
func TestGoStoppable(t *testing.T) {
	g := New()
	stops := make(chan context.CancelFunc, 1)
	ended := make(chan struct{})
	dropped := false
	g.GoStoppable(func(context.CancelFunc) bool { return false }, func(context.Context) { dropped = true })
	g.GoStoppable(func(stop context.CancelFunc) bool { stops <- stop; return true },
		func(ctx context.Context) { <-ctx.Done(); close(ended) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	(<-stops)()
	<-ended // stopped on its own, with Run still running
	select {
	case <-done:
		t.Fatal("Run returned before its context ended")
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if dropped {
		t.Error("a function its claim dropped ran")
	}
}
