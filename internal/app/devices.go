package app

import (
	"context"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/admission"
	"github.com/nodelet/nodelet/internal/cm/topology"
	"github.com/nodelet/nodelet/internal/cm/topologymanager"
	"github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/deviceplugin"
	"github.com/nodelet/nodelet/internal/pleg"
	"github.com/nodelet/nodelet/internal/podworkers"
)

// startDevicePlugins serves device plugin registrations at <root-dir>/device-plugins as one of
// the components, and makes the device manager a hint provider of the topology manager. Without
// it nodelet still runs pods, only without plugin devices, so a failure is logged, not fatal.
func startDevicePlugins(comps *components, rootDir string, machine *topology.Machine, tm *topologymanager.Manager) *deviceplugin.Manager {
	m, err := deviceplugin.New(deviceplugin.Options{Dir: filepath.Join(rootDir, "device-plugins"), NUMANodes: machine.NUMANodeIDs()})
	if err == nil {
		err = m.Listen()
	}
	if err != nil {
		klog.ErrorS(err, "Device plugins are not available")
		return nil
	}
	// The devices are set aside at admission by the topology manager, first of its providers.
	tm.AddHintProvider(m)
	comps.start("device plugins", m.Run)
	return m
}

// trackDevicePods lets the device manager free the devices of pods that are neither active
// nor running containers, once the loop has handled every pod source's first snapshot (until
// then, after a restart, the checkpointed assignments all stand). Running pods count because
// a pod's containers may outlive it. It also tells the manager which containers ran when
// nodelet started: those keep their devices at readmission even before their plugin
// registers again, as upstream.
func (n *agent) trackDevicePods(ctx context.Context, workers *podworkers.PodWorkers, relister *pleg.PLEG, podsSynced func() bool) {
	if n.devices == nil {
		return
	}
	n.devices.RunningAtStart(n.runningContainers(ctx))
	n.devices.TrackPods(func() []types.UID {
		var uids []types.UID
		for _, p := range n.activePods(workers) {
			uids = append(uids, p.UID)
		}
		running, _ := relister.RunningPods()
		for _, p := range running {
			if slices.ContainsFunc(p.Containers, func(c *container.ContainerStatus) bool { return c.State == container.StateRunning }) {
				uids = append(uids, p.UID)
			}
		}
		return uids
	}, func() bool {
		_, listed := relister.RunningPods()
		return podsSynced() && !listed.IsZero() // the runtime's pods are known too
	})
}

// runningContainers lists the runtime's running containers by pod UID. A runtime that does
// not answer leaves it empty (every restored assignment is then checked as on a node reboot),
// as upstream.
func (n *agent) runningContainers(ctx context.Context) map[types.UID][]string {
	pods, err := n.runtime.GetPods(ctx, false)
	if err != nil {
		klog.ErrorS(err, "Listing the running containers for the device manager")
	}
	out := map[types.UID][]string{}
	for _, p := range pods {
		for _, c := range p.Containers {
			if c.State == container.StateRunning {
				out[p.UID] = append(out[p.UID], c.Name)
			}
		}
	}
	return out
}

// admissionDevices keeps a missing device plugin manager a nil interface.
func admissionDevices(m *deviceplugin.Manager) admission.Devices {
	if m == nil {
		return nil
	}
	return m
}
