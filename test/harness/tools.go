//go:build tools

// Package harness pins the upstream Kubernetes commands this module builds, so `go mod tidy`
// keeps their dependencies. hack/control-plane.sh builds them with `go build`.
package harness

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
