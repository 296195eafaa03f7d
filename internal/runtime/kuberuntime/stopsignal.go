package kuberuntime

import (
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// toCRISignal is the container's lifecycle.stopSignal as CRI's enum; RUNTIME_DEFAULT (the
// image's STOPSIGNAL, else SIGTERM) when it sets none. A name CRI does not list cannot pass
// the API server's or the static pod source's validation.
func toCRISignal(c *v1.Container) runtimeapi.Signal {
	if c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
		return runtimeapi.Signal_RUNTIME_DEFAULT
	}
	s, _ := cri.Signal(*c.Lifecycle.StopSignal)
	return s
}
