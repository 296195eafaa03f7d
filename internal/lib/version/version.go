// Package version reports which nodelet build is running.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time, e.g.
//
//	go build -ldflags "-X github.com/nodelet/nodelet/internal/lib/version.Version=v0.2.0 \
//	  -X github.com/nodelet/nodelet/internal/lib/version.GitCommit=$(git rev-parse HEAD)"
var (
	Version   = "v0.1.0-dev"
	GitCommit = ""
)

// KubeletVersion is the kubelet version nodelet reports in the node's status.
// It is valid semver so kubectl and the API server can compare it: the
// Kubernetes release whose API nodelet implements, tagged with nodelet's own
// version.
const KubeletVersion = "v1.33.4-nodelet.0.1.0"

// Commit returns GitCommit, or the VCS revision Go stamped into the binary
// when GitCommit was not set.
func Commit() string {
	if GitCommit != "" {
		return GitCommit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// String describes this build in one line.
func String() string {
	return fmt.Sprintf("nodelet %s (commit %s, kubelet %s, %s %s/%s)",
		Version, Commit(), KubeletVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
