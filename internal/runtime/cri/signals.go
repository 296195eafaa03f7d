package cri

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRI spells the real-time signals without '+' and '-' (SIGRTMIN+1 is SIGRTMINPLUS1), the
// API with them; every other name is the same on both sides.
var (
	toCRISpelling   = strings.NewReplacer("+", "PLUS", "-", "MINUS")
	fromCRISpelling = strings.NewReplacer("PLUS", "+", "MINUS", "-")
)

// Signal is the API's signal as CRI's enum; false for a name CRI does not list (the API server
// accepts only the names it lists, on Linux).
func Signal(s v1.Signal) (runtimeapi.Signal, bool) {
	v, ok := runtimeapi.Signal_value[toCRISpelling.Replace(string(s))]
	return runtimeapi.Signal(v), ok && v != int32(runtimeapi.Signal_RUNTIME_DEFAULT)
}

// APISignal is the API's name of a signal the runtime reports; "" for RUNTIME_DEFAULT (a
// runtime that does not report it) or a value CRI does not list.
func APISignal(s runtimeapi.Signal) string {
	name, ok := runtimeapi.Signal_name[int32(s)]
	if !ok || s == runtimeapi.Signal_RUNTIME_DEFAULT {
		return ""
	}
	return fromCRISpelling.Replace(name)
}
