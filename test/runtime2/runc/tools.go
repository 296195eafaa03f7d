//go:build tools

// Package runc pins runc 1.3, the OCI runtime containerd 2 runs containers with
// (hack/containerd2.sh builds it with seccomp into _output/runtime2/bin).
package runc

import _ "github.com/opencontainers/runc"
