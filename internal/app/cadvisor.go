package app

import (
	"net/http"

	"github.com/nodelet/nodelet/internal/server/cadvisor"
)

// cadvisorHandler serves /metrics/cadvisor from the cgroups. Without nodelet's pod cgroups
// only the machine's series are served: pods then live where the runtime put them.
func (n *agent) cadvisorHandler() http.Handler {
	src := cadvisor.Source{Pods: n.pods.Pods, PodStatus: n.syncer.Cache.Get, OOMs: &n.ooms}
	if n.cm.OwnsPodCgroups() {
		src.PodCgroup = n.cm.PodCgroup
		src.Layers = n.summaryProvider().Layers
	} else {
		src.Pods = nil
	}
	if n.host != nil { // else machine_memory_bytes is left out
		src.MachineMemory = n.host.MemoryBytes
	}
	return cadvisor.NewHandler(src)
}
