package deviceplugin

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// ContainerDevices returns the devices a container holds, for the pod-resources API: one entry
// per resource and NUMA node (no topology for devices whose plugin reports none).
func (m *Manager) ContainerDevices(podUID types.UID, container string) []*podresourcesv1.ContainerDevices {
	m.mu.Lock()
	defer m.mu.Unlock()
	cd := m.pods[podUID][container]
	if cd == nil {
		return nil
	}
	var out []*podresourcesv1.ContainerDevices
	for _, name := range slices.Sorted(maps.Keys(cd.devices)) {
		perNUMA := cd.devices[name]
		for _, node := range slices.Sorted(maps.Keys(perNUMA)) {
			out = append(out, &podresourcesv1.ContainerDevices{
				ResourceName: name, DeviceIds: slices.Clone(perNUMA[node]), Topology: topologyInfo(node),
			})
		}
	}
	return out
}

// AllocatableDevices returns every healthy device, one entry per device and NUMA node, for the
// pod-resources API.
func (m *Manager) AllocatableDevices() []*podresourcesv1.ContainerDevices {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*podresourcesv1.ContainerDevices
	for _, name := range slices.Sorted(maps.Keys(m.resources)) {
		r := m.resources[name]
		for _, id := range slices.Sorted(maps.Keys(r.healthy())) {
			numa := r.devices[id].numa
			if len(numa) == 0 {
				numa = []int64{noNUMANode}
			}
			for _, node := range numa {
				out = append(out, &podresourcesv1.ContainerDevices{ResourceName: name, DeviceIds: []string{id}, Topology: topologyInfo(node)})
			}
		}
	}
	return out
}

// topologyInfo describes one NUMA node; nil for noNUMANode.
func topologyInfo(node int64) *podresourcesv1.TopologyInfo {
	if node == noNUMANode {
		return nil
	}
	return &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: node}}}
}
