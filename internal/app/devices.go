package app

import (
	"context"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/cm/deviceplugin"
	"github.com/nodelet/nodelet/internal/pod/admission"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// startDevicePlugins serves device plugin registrations at <root-dir>/device-plugins as one of
// the components; the topology manager sets the devices aside at admission, the device
// manager first of its hint providers. Without
// it nodelet still runs pods, only without plugin devices, so a failure is logged, not fatal.
//
// The manager frees the devices of pods that are neither active nor running containers, once
// the loop has handled every pod source's first snapshot (until then, after a restart, the
// checkpointed assignments all stand). Running pods count because a pod's containers may
// outlive it. It is told which containers ran when nodelet started: those keep their devices
// at readmission even before their plugin registers again, as upstream.
func (n *agent) startDevicePlugins(ctx context.Context) *deviceplugin.Manager {
	m, err := deviceplugin.New(deviceplugin.Options{
		Dir: filepath.Join(n.cfg.RootDir, "device-plugins"), NUMANodes: n.machine.NUMANodeIDs(),
		InUse: n.devicePodsInUse, SourcesReady: n.devicePodsSynced, RunningAtStart: runningContainers(ctx, n.cri),
	})
	if err == nil {
		err = m.Listen()
	}
	if err != nil {
		klog.ErrorS(err, "Device plugins are not available")
		return nil
	}
	n.comps.start("device plugins", m.Run)
	return m
}

// devicePodsInUse are the pods that may hold devices: the active ones and those with a
// running container.
func (n *agent) devicePodsInUse() []types.UID {
	var uids []types.UID
	for _, p := range n.activePods() {
		uids = append(uids, p.UID)
	}
	running, _ := n.listing.RunningPods()
	for _, p := range running {
		if slices.ContainsFunc(p.Containers, func(c *container.ContainerStatus) bool { return c.State == container.StateRunning }) {
			uids = append(uids, p.UID)
		}
	}
	return uids
}

// devicePodsSynced: the loop handled every source's first snapshot and the runtime's pods
// are known too.
func (n *agent) devicePodsSynced() bool {
	_, listed := n.listing.RunningPods()
	return n.synced.Ready() && !listed.IsZero()
}

// runningContainers lists the runtime's running containers by pod UID. A runtime that does
// not answer leaves it empty (every restored assignment is then checked as on a node reboot),
// as upstream.
func runningContainers(ctx context.Context, c *cri.Client) map[types.UID][]string {
	running := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	list, err := c.ListContainers(ctx, running)
	if err != nil {
		klog.ErrorS(err, "Listing the running containers for the device manager")
	}
	out := map[types.UID][]string{}
	for _, ctr := range list {
		uid, name := types.UID(ctr.Labels[container.LabelPodUID]), ctr.Labels[container.LabelContainerName]
		if name == "" {
			name = ctr.GetMetadata().GetName()
		}
		if uid != "" {
			out[uid] = append(out[uid], name)
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
