//go:build tools

// Package containerd pins containerd 2, the second runtime the tests can run nodelet on: the
// daemon, ctr and the runc shim (the shim must come from the same release, or containerd 2 runs
// whatever older shim is first in PATH). hack/containerd2.sh builds them into
// _output/runtime2/bin. runc has a module of its own (../runc): containerd needs a newer runc
// as a library than the runc release it is run with.
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
