package deviceplugin

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/nodelet/nodelet/internal/sidecar"
)

// containerDevices are the devices one container holds, per resource, and what each plugin
// answered to Allocate for them (kept so a restarted container gets the same setup).
type containerDevices struct {
	ids       map[string][]string
	responses map[string]*pluginapi.ContainerAllocateResponse
}

// Allocation is what the plugins want added to a container's runtime config.
type Allocation struct {
	Envs        map[string]string
	Mounts      []*pluginapi.Mount
	Devices     []*pluginapi.DeviceSpec
	Annotations map[string]string
	CDIDevices  []string
}

// Admit sets devices aside for every container of pod that requests a plugin resource, or
// says why it cannot. Devices held by pods no longer in active are freed first (pods that
// finished without being removed yet). Devices of init containers that run to completion are
// handed on to the containers after them. Nothing is held when it fails.
func (m *Manager) Admit(pod *v1.Pod, active []*v1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseInactive(pod.UID, active)
	if _, ok := m.pods[pod.UID]; ok {
		return nil
	}
	inUse := m.inUse()
	plan := map[string]*containerDevices{}
	reusable := map[string][]string{} // from init containers that finish before the next starts
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cd, err := m.pick(c, inUse, reusable)
		if err != nil {
			return err
		}
		if cd == nil {
			continue
		}
		plan[c.Name] = cd
		if !sidecar.Is(c) { // sidecars keep theirs
			for name, ids := range cd.ids {
				reusable[name] = append(reusable[name], ids...)
			}
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cd, err := m.pick(c, inUse, reusable)
		if err != nil {
			return err
		}
		if cd != nil {
			plan[c.Name] = cd
		}
	}
	if len(plan) > 0 {
		m.pods[pod.UID] = plan
		klog.V(2).InfoS("Devices set aside for pod", "pod", klog.KObj(pod), "containers", len(plan))
	}
	return nil
}

// RemovePod frees the devices of a pod that is gone.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[uid]; ok {
		delete(m.pods, uid)
		klog.V(2).InfoS("Freed the devices of a removed pod", "podUID", uid)
	}
}

// Allocate returns the device setup for one container of an admitted pod, calling the plugins'
// Allocate the first time and PreStartContainer (when a plugin asks for it) every time. A
// container not set aside at admission (a plugin registered later) gets devices now.
func (m *Manager) Allocate(ctx context.Context, pod *v1.Pod, c *v1.Container) (*Allocation, error) {
	type call struct {
		name string
		p    *plugin
		ids  []string
		resp *pluginapi.ContainerAllocateResponse
	}
	m.mu.Lock()
	cd, err := m.containerDevices(pod.UID, c)
	if err != nil || cd == nil {
		m.mu.Unlock()
		return nil, err
	}
	var calls []call
	for _, name := range slices.Sorted(maps.Keys(cd.ids)) {
		var p *plugin
		if r := m.resources[name]; r != nil && !r.stopped {
			p = r.plugin
		}
		calls = append(calls, call{name: name, p: p, ids: cd.ids[name], resp: cd.responses[name]})
	}
	m.mu.Unlock()

	out := &Allocation{Envs: map[string]string{}, Annotations: map[string]string{}}
	for _, call := range calls {
		if call.resp == nil {
			if call.p == nil {
				return nil, fmt.Errorf("no device plugin is serving %s", call.name)
			}
			if call.resp, err = call.p.allocate(ctx, call.ids); err != nil {
				return nil, err
			}
			m.remember(pod.UID, c.Name, call.name, call.resp)
		}
		if call.p != nil {
			if err := call.p.preStart(ctx, call.ids); err != nil {
				return nil, err
			}
		}
		out.add(call.resp)
	}
	klog.V(2).InfoS("Devices allocated to container", "pod", klog.KObj(pod), "container", c.Name, "resources", len(calls))
	return out, nil
}

// containerDevices returns what c holds, picking devices for resources it was not given at
// admission. nil means c requests no plugin resource. Called with m.mu held.
func (m *Manager) containerDevices(uid types.UID, c *v1.Container) (*containerDevices, error) {
	cd := m.pods[uid][c.Name]
	missing := false
	for name := range m.requests(c) {
		if cd == nil || cd.ids[name] == nil {
			missing = true
		}
	}
	if !missing {
		return cd, nil
	}
	extra, err := m.pick(c, m.inUse(), nil)
	if err != nil {
		return nil, err
	}
	if cd == nil {
		cd = &containerDevices{ids: map[string][]string{}, responses: map[string]*pluginapi.ContainerAllocateResponse{}}
	}
	for name, ids := range extra.ids {
		if cd.ids[name] == nil {
			cd.ids[name] = ids
		}
	}
	if m.pods[uid] == nil {
		m.pods[uid] = map[string]*containerDevices{}
	}
	m.pods[uid][c.Name] = cd
	return cd, nil
}

func (m *Manager) remember(uid types.UID, container, name string, resp *pluginapi.ContainerAllocateResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cd := m.pods[uid][container]; cd != nil {
		cd.responses[name] = resp
	}
}

// requests returns the count c asks of each plugin resource. Extended resources cannot be
// overcommitted, so limits and requests agree; limits are read first as the API defaults
// requests from them.
func (m *Manager) requests(c *v1.Container) map[string]int64 {
	out := map[string]int64{}
	for _, list := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for name, q := range list {
			if _, ok := m.resources[string(name)]; ok && q.Value() > 0 {
				out[string(name)] = q.Value()
			}
		}
	}
	return out
}

// pick chooses devices for c: first from reusable (taking them out of it), then healthy
// devices nobody holds, in ID order. The chosen devices are added to inUse. Called with m.mu held.
func (m *Manager) pick(c *v1.Container, inUse map[string]map[string]bool, reusable map[string][]string) (*containerDevices, error) {
	want := m.requests(c)
	if len(want) == 0 {
		return nil, nil
	}
	cd := &containerDevices{ids: map[string][]string{}, responses: map[string]*pluginapi.ContainerAllocateResponse{}}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		n := int(want[name])
		take := min(n, len(reusable[name]))
		ids := slices.Clone(reusable[name][:take])
		if reusable != nil {
			reusable[name] = reusable[name][take:]
		}
		var free []string
		for id := range m.resources[name].healthy() {
			if !inUse[name][id] {
				free = append(free, id)
			}
		}
		slices.Sort(free)
		if len(ids)+len(free) < n {
			return nil, fmt.Errorf("container %s requests %d %s but only %d healthy devices are free", c.Name, n, name, len(ids)+len(free))
		}
		ids = append(ids, free[:n-len(ids)]...)
		if inUse[name] == nil {
			inUse[name] = map[string]bool{}
		}
		for _, id := range ids {
			inUse[name][id] = true
		}
		cd.ids[name] = ids
	}
	return cd, nil
}

// inUse returns the devices held by any pod, per resource. Called with m.mu held.
func (m *Manager) inUse() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, containers := range m.pods {
		for _, cd := range containers {
			for name, ids := range cd.ids {
				if out[name] == nil {
					out[name] = map[string]bool{}
				}
				for _, id := range ids {
					out[name][id] = true
				}
			}
		}
	}
	return out
}

// releaseInactive frees the devices of pods that are neither active nor keep (the pod being
// admitted). Called with m.mu held.
func (m *Manager) releaseInactive(keep types.UID, active []*v1.Pod) {
	live := map[types.UID]bool{keep: true}
	for _, p := range active {
		live[p.UID] = true
	}
	for uid := range m.pods {
		if !live[uid] {
			delete(m.pods, uid)
			klog.V(2).InfoS("Freed the devices of a pod that is no longer active", "podUID", uid)
		}
	}
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
