// Command pause is the infrastructure container of every nodelet pod sandbox.
// It holds the pod's namespaces open, and because it is PID 1 of a shared PID
// namespace it reaps orphaned children so they do not linger as zombies.
// Build it static: CGO_ENABLED=0 go build ./images/pause
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("nodelet pause 3.10")
		return
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reapChildren()
			continue
		}
		os.Exit(0)
	}
}

// reapChildren collects every exited child; one SIGCHLD may stand for many exits.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
