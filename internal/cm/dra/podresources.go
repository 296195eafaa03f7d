package dra

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// ContainerDynamicResources lists the claims c references that the node keeps, each with the
// devices its drivers prepared, for the pod-resources API.
func (m *Manager) ContainerDynamicResources(pod *v1.Pod, c *v1.Container) []*podresourcesv1.DynamicResource {
	var out []*podresourcesv1.DynamicResource
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, _, err := claimName(pod, pc)
		if err != nil || name == "" {
			continue
		}
		for _, rc := range c.Resources.Claims {
			info := m.claims[pod.Namespace+"/"+name]
			if rc.Name != pc.Name || info == nil {
				continue
			}
			out = append(out, &podresourcesv1.DynamicResource{ClaimName: info.ClaimName, ClaimNamespace: info.Namespace,
				ClaimResources: info.claimResources()})
		}
	}
	return out
}

// claimResources are the claim's devices, one entry per device with its CDI IDs.
func (c *claimInfo) claimResources() []*podresourcesv1.ClaimResource {
	var out []*podresourcesv1.ClaimResource
	for _, driver := range slices.Sorted(maps.Keys(c.DriverState)) {
		for _, d := range c.DriverState[driver].Devices {
			r := &podresourcesv1.ClaimResource{DriverName: driver, PoolName: d.PoolName, DeviceName: d.DeviceName}
			for _, id := range d.CDIDeviceIDs {
				r.CDIDevices = append(r.CDIDevices, &podresourcesv1.CDIDevice{Name: id})
			}
			out = append(out, r)
		}
	}
	return out
}
