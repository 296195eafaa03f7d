package app

import (
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/csi"
	"github.com/nodelet/nodelet/internal/volumes/plugins"
)

// newVolumes builds the volume manager over every plugin; in cluster mode they read objects
// and claims and request tokens through the API. buildNode (or buildPod) starts it.
func (n *agent) newVolumes() *volumes.Manager {
	deps := plugins.Deps{NodeName: n.cfg.NodeName, NodeIP: node.PrimaryHostIP(n.cfg.NodeIP), AllocatableMemory: n.allocatableMemory(),
		PodMemoryLimit: cm.PodMemoryLimit, Capacity: n.capacity(), ImageVolumes: n.cfg.ImageVolumes}
	opts := volumes.Options{RootDir: n.cfg.RootDir, Pods: n.podStates(), Node: n.node, Recorder: n.recorder}
	if n.objects != nil {
		deps.Objects, deps.Tokens = n.objects, n.objects
		opts.Claims, opts.Resizer = n.objects, n.objects
	}
	if n.cluster != nil && n.cfg.EnableControllerAttachDetach {
		// As upstream: the attach/detach controller's volumes are mounted only once a node
		// status update has listed them in volumesInUse (standalone has no Node to wait for).
		opts.WaitReportedInUse = true
	}
	n.csi = csi.NewDrivers()
	var csiAPI csi.API
	if n.cluster != nil {
		csiAPI = csi.NewAPI(n.cluster.clients.API)
	}
	csiPlugin := csi.NewPlugin(n.cfg.RootDir, n.cfg.NodeName, n.csi, csiAPI, nil)
	n.csiStats = csi.NewStats(csiPlugin)
	opts.Plugins = append(plugins.All(deps), csiPlugin)
	return volumes.New(opts)
}

// startCSIRegistrar registers the CSI drivers that announce themselves in
// <root-dir>/plugins_registry (as node-driver-registrar does); in cluster mode it keeps the
// node's CSINode listing them.
func (n *agent) startCSIRegistrar() {
	var objs csi.NodeObjects
	if n.cluster != nil {
		objs = csi.NewAPIObjects(n.cluster.clients.API, n.cfg.NodeName, n.cluster.view.ObserveNode)
	}
	r := csi.NewRegistrar(filepath.Join(n.cfg.RootDir, "plugins_registry"), n.csi, objs)
	if n.draPlugs != nil {
		r.Handle(registerapi.DRAPlugin, n.draPlugs) // DRA drivers register through the same watcher
	}
	n.comps.start("CSI plugin registration", r.Run)
}

// podStates answers the volume manager from the pod workers' states, the pod manager and the
// PLEG's listing of the runtime. The volume manager is made before the runtime (which mounts
// through it), the PLEG after the runtime and the pod workers after the pod sync (which runs
// over both), so it reads what they write into, made before all of them.
type podStates struct {
	worker       func(uid types.UID) (podworkers.State, bool)
	wanted       func(uid types.UID) bool
	running      func() ([]*container.RunningPod, time.Time)
	sourcesReady func() bool
}

// podStates are the volume manager's. In run-once mode (no loop, no worker) and in the
// foreground (whose housekeeping would take the node's other pods) no pod's containers are
// ever gone but for a worker's.
func (n *agent) podStates() *podStates {
	sourcesReady := n.synced.Ready // false on the foreground's nil Synced
	if n.cfg.RunOnce {
		sourcesReady = func() bool { return false }
	}
	return &podStates{
		worker:       n.workerStates.State,
		wanted:       func(uid types.UID) bool { _, ok := n.pods.Get(uid); return ok },
		running:      n.listing.RunningPods,
		sourcesReady: sourcesReady,
	}
}

// ContainersGone: a pod with a worker is gone once the worker has terminated it. A pod
// without one is gone once every source has been seen, no source wants it and the runtime
// runs nothing of it (a pod left from before a restart).
func (p *podStates) ContainersGone(uid types.UID) bool {
	if state, ok := p.worker(uid); ok {
		return state == podworkers.Terminated
	}
	if !p.sourcesReady() || p.wanted(uid) {
		return false
	}
	listed, at := p.running()
	if at.IsZero() {
		return false
	}
	for _, rp := range listed {
		if rp.UID == uid {
			return !runs(rp)
		}
	}
	return true
}

// runs reports whether any container of rp runs or is about to, or its sandbox is ready.
func runs(rp *container.RunningPod) bool {
	for _, sb := range rp.Sandboxes {
		if sb.Ready {
			return true
		}
	}
	for _, c := range rp.Containers {
		if c.State == container.StateRunning || c.State == container.StateCreated {
			return true
		}
	}
	return false
}
