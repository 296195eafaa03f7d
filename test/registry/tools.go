//go:build tools

// Package registry pins the distribution registry command this module builds
// (hack/registries.sh build), so `go mod tidy` keeps its dependencies.
package registry

import _ "github.com/distribution/distribution/v3/cmd/registry"
