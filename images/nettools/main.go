// Command nettools stands in for curl and a UDP-capable nc in the test agnhost image: the
// upstream image ships both, the busybox root it is built on here has neither (busybox nc
// lacks -u). Installed as /usr/bin/curl and /usr/bin/nc, it picks its role from its name and
// covers the options the node e2e suite's networking checks use.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	var code int
	switch name := filepath.Base(os.Args[0]); name {
	case "curl":
		code = curl(os.Args[1:], os.Stdout, os.Stderr)
	case "nc":
		code = nc(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	default:
		fmt.Fprintf(os.Stderr, "nettools: run as curl or nc, not %q\n", name)
		code = 2
	}
	os.Exit(code)
}

// usageError prints err and returns curl's and nc's exit code for bad usage.
func usageError(stderr io.Writer, tool string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", tool, err)
	return 2
}
