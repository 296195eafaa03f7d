//go:build tools

// Package harness pins the upstream Kubernetes commands this module builds, so `go mod tidy`
// keeps their dependencies. hack/control-plane.sh builds them with `go build`, and the node
// conformance suite (test/e2e_node, built with `go test -c`) and its agnhost, nonewprivs and
// sample-device-plugin test images, and the DRA test driver (test/e2e/dra/test-driver).
package harness

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/test/e2e/dra/test-driver"
	_ "k8s.io/kubernetes/test/e2e_node"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/images/nonewprivs"
	_ "k8s.io/kubernetes/test/images/sample-device-plugin"
)
