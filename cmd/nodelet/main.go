// Command nodelet is a from-scratch Kubernetes node agent.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/app"
)

func main() {
	os.Exit(run())
}

func run() int {
	defer klog.Flush()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// After the first signal, restore the default handling so a second one
	// kills a shutdown that hangs.
	go func() {
		<-ctx.Done()
		stop()
	}()

	cmd := newRootCommand(app.Run, os.Stdout, os.Stderr)
	return execute(ctx, cmd, os.Args[1:], os.Stderr)
}
