package app

import (
	"github.com/nodelet/nodelet/internal/cm/dra"
	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// newDRA makes the DRA manager and its driver registry when the DynamicResourceAllocation gate
// is on (nil otherwise): the plugin watcher registers the drivers (DRAPlugin sockets in
// <root-dir>/plugins_registry), the runtime prepares a pod's claims before its sandbox and
// hands their CDI devices to the containers, and the pod's termination (or its removal, or the
// reconcile loop for pods gone while nodelet was down) unprepares them. The claims prepared
// are checkpointed in <root-dir>/dra_manager_state, upstream's file.
func (n *agent) newDRA() (*dra.Manager, *dra.Plugins, error) {
	if !n.cfg.DynamicResources {
		return nil, nil, nil
	}
	metrics.EnableDRA()
	var client kubeclient.Interface
	if n.cluster != nil {
		client = n.cluster.clients.API
	}
	plugins := dra.NewPlugins(client, n.cfg.NodeName)
	m, err := dra.New(dra.Options{StateDir: n.cfg.RootDir, Client: client, Plugins: plugins,
		InUse: n.devicePodsInUse, SourcesReady: n.devicePodsSynced})
	if err != nil {
		return nil, nil, err
	}
	if n.cluster != nil {
		n.cluster.startAPI(n.comps, "DRA plugins", plugins.Run)
	} else {
		n.comps.start("DRA plugins", plugins.Run)
	}
	n.comps.start("DRA manager", m.Run)
	return m, plugins, nil
}
