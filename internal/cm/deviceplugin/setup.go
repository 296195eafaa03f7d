package deviceplugin

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// ContainerSetup returns the device setup for one container about to be created: the plugins'
// Allocate answers kept since admission, after PreStartContainer for the plugins that ask for
// it (every time the container starts). A container not given devices at admission (their
// plugin registered later) gets them now, without NUMA alignment.
func (m *Manager) ContainerSetup(ctx context.Context, pod *v1.Pod, c *v1.Container) (*Allocation, error) {
	if err := m.allocateMissing(ctx, pod, c); err != nil {
		return nil, err
	}
	type call struct {
		name string
		p    *plugin
		ids  []string
		resp *pluginapi.ContainerAllocateResponse
	}
	m.mu.Lock()
	cd := m.pods[pod.UID][c.Name]
	if cd == nil {
		m.mu.Unlock()
		return nil, nil
	}
	var calls []call
	for _, name := range slices.Sorted(maps.Keys(cd.devices)) {
		var p *plugin
		if r := m.resources[name]; r != nil && !r.stopped {
			p = r.plugin
		}
		calls = append(calls, call{name: name, p: p, ids: cd.devices[name].IDs(), resp: cd.responses[name]})
	}
	m.mu.Unlock()

	out := &Allocation{Envs: map[string]string{}, Annotations: map[string]string{}}
	for _, call := range calls {
		if call.resp == nil {
			return nil, fmt.Errorf("no Allocate answer is kept for the %s devices of container %s", call.name, c.Name)
		}
		// A plugin not registered again since a restart cannot be asked; the kept answer stands.
		if call.p != nil {
			if err := call.p.preStart(ctx, call.ids); err != nil {
				return nil, err
			}
		}
		out.add(call.resp)
	}
	klog.V(2).InfoS("Device setup for container", "pod", klog.KObj(pod), "container", c.Name, "resources", len(calls))
	return out, nil
}

// allocateMissing gives c the devices of any resource it requests and holds none of.
func (m *Manager) allocateMissing(ctx context.Context, pod *v1.Pod, c *v1.Container) error {
	m.mu.Lock()
	missing := false
	for name := range m.requests(c) {
		missing = missing || len(m.pods[pod.UID][c.Name].held(name)) == 0
	}
	m.mu.Unlock()
	if !missing {
		return nil
	}
	m.allocating.Lock()
	defer m.allocating.Unlock()
	return m.allocateContainer(ctx, pod.UID, c, 0)
}

// add merges one plugin's answer. Later plugins do not override what earlier ones set.
func (a *Allocation) add(resp *pluginapi.ContainerAllocateResponse) {
	for k, v := range resp.Envs {
		if _, ok := a.Envs[k]; !ok {
			a.Envs[k] = v
		}
	}
	for k, v := range resp.Annotations {
		if _, ok := a.Annotations[k]; !ok {
			a.Annotations[k] = v
		}
	}
	a.Mounts = append(a.Mounts, resp.Mounts...)
	a.Devices = append(a.Devices, resp.Devices...)
	for _, d := range resp.CDIDevices {
		if d != nil && d.Name != "" {
			a.CDIDevices = append(a.CDIDevices, d.Name)
		}
	}
}
