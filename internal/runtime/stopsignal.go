package runtime

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRI spells the real-time signals without '+' and '-' (SIGRTMIN+1 is SIGRTMINPLUS1), the
// API with them; every other name is the same on both sides.
var criSignalSpelling = strings.NewReplacer("+", "PLUS", "-", "MINUS")

// toCRISignal is the container's lifecycle.stopSignal as CRI's enum; RUNTIME_DEFAULT (the
// image's STOPSIGNAL, else SIGTERM) when it sets none. The API server only accepts the
// signals CRI lists, so an unknown name cannot come from a validated pod; it falls back to
// the runtime's default too.
func toCRISignal(c *v1.Container) runtimeapi.Signal {
	if c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
		return runtimeapi.Signal_RUNTIME_DEFAULT
	}
	return runtimeapi.Signal(runtimeapi.Signal_value[criSignalSpelling.Replace(string(*c.Lifecycle.StopSignal))])
}

// fromCRISignal is the API's name of the signal a runtime reports; "" for RUNTIME_DEFAULT,
// which a runtime that does not report the signal leaves.
func fromCRISignal(s runtimeapi.Signal) string {
	if s == runtimeapi.Signal_RUNTIME_DEFAULT {
		return ""
	}
	name, ok := runtimeapi.Signal_name[int32(s)]
	if !ok {
		return ""
	}
	name = strings.Replace(name, "PLUS", "+", 1)
	return strings.Replace(name, "MINUS", "-", 1)
}
