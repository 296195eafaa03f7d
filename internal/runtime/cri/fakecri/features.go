package fakecri

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

// SetFeatures makes Status report handlers with their features, and the runtime-wide
// features, as a CRI v1.33 runtime does; the handlers are configured too. Until it is called
// Status reports neither, as containerd 1.6 does.
func (f *Fake) SetFeatures(handlers []*runtimeapi.RuntimeHandler, features *runtimeapi.RuntimeFeatures) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reported = &runtimeapi.StatusResponse{RuntimeHandlers: handlers, Features: features}
	for _, h := range handlers {
		if h.GetName() != "" {
			f.handlers[h.GetName()] = true
		}
	}
}
