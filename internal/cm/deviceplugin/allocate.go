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

	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
)

// containerDevices are the devices one container holds, per resource, and what each plugin
// answered to Allocate for them (kept, and checkpointed, so a restarted container or nodelet
// gets the same setup without asking the plugin again).
type containerDevices struct {
	devices   map[string]DevicesPerNUMA
	responses map[string]*pluginapi.ContainerAllocateResponse
}

// admission is the pod whose containers are being given devices, and the devices its
// finished init containers hand on to the containers after them (upstream's devices to reuse).
type admission struct {
	pod      types.UID
	reusable map[string][]string // resource → device IDs
}

// Allocation is what the plugins want added to a container's runtime config.
type Allocation struct {
	Envs        map[string]string
	Mounts      []*pluginapi.Mount
	Devices     []*pluginapi.DeviceSpec
	Annotations map[string]string
	CDIDevices  []string
}

// Allocate sets devices aside for container c of pod, within affinity's NUMA nodes as far as
// they go (a zero mask: anywhere), and has the plugins prepare them. It is the topology
// manager's HintProvider call, made for every container in order, init containers first. A
// container that holds its devices already (a restart) keeps them. On an error the pod is
// refused, so whatever it holds is freed.
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container, affinity topology.Hint) error {
	m.allocating.Lock()
	defer m.allocating.Unlock()
	m.beginAdmission(pod.UID)
	m.mu.Lock()
	ctx := m.runCtx // admission has no context of its own; nil before Run, when no plugin is there to call
	m.mu.Unlock()
	if err := m.allocateContainer(ctx, pod.UID, c, affinity.NUMANodes); err != nil {
		m.RemovePod(pod.UID)
		return err
	}
	m.handOn(pod, c)
	return nil
}

// beginAdmission makes uid the pod being admitted: reusable devices of any other pod are
// dropped, and pods no longer active free their devices.
func (m *Manager) beginAdmission(uid types.UID) {
	var active []types.UID
	ready := m.sourcesReady()
	if ready {
		active = m.opts.InUse()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.admission.pod != uid {
		m.admission = admission{pod: uid, reusable: map[string][]string{}}
	}
	if ready {
		m.releaseInactive(active)
	}
}

// releaseInactive frees the devices of pods neither in active nor being admitted. Called with
// m.mu held.
func (m *Manager) releaseInactive(active []types.UID) {
	live := map[types.UID]bool{m.admission.pod: true}
	for _, uid := range active {
		live[uid] = true
	}
	freed := false
	for uid := range m.pods {
		if !live[uid] {
			delete(m.pods, uid)
			freed = true
			klog.V(2).InfoS("Freed the devices of a pod that is no longer active", "podUID", uid)
		}
	}
	if freed {
		m.writeCheckpoint()
	}
}

// handOn records what c's devices mean for the containers after it: a init container that runs
// to completion hands its devices on; an app container or a sidecar keeps its own.
func (m *Manager) handOn(pod *v1.Pod, c *v1.Container) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cd := m.pods[pod.UID][c.Name]
	if cd == nil || m.admission.pod != pod.UID {
		return
	}
	isInit := slices.ContainsFunc(pod.Spec.InitContainers, func(ic v1.Container) bool { return ic.Name == c.Name })
	for name, perNUMA := range cd.devices {
		ids := perNUMA.IDs()
		if isInit && !sidecar.Is(c) {
			m.admission.reusable[name] = append(m.admission.reusable[name], ids...)
			continue
		}
		m.admission.reusable[name] = slices.DeleteFunc(m.admission.reusable[name], func(id string) bool { return slices.Contains(ids, id) })
	}
}

// RemovePod frees the devices of a pod that is gone.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[uid]; ok {
		delete(m.pods, uid)
		m.writeCheckpoint()
		klog.V(2).InfoS("Freed the devices of a removed pod", "podUID", uid)
	}
}

// allocateContainer gives c the devices it requests and does not hold yet, and has the plugins
// prepare them.
func (m *Manager) allocateContainer(ctx context.Context, uid types.UID, c *v1.Container, affinity topology.Mask) error {
	m.mu.Lock()
	want := m.requests(c)
	m.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if err := m.allocateResource(ctx, uid, c.Name, name, int(want[name]), affinity); err != nil {
			return err
		}
	}
	return nil
}

// allocateResource gives container n devices of resource name, unless it holds them already,
// and calls the plugin's Allocate for them.
func (m *Manager) allocateResource(ctx context.Context, uid types.UID, container, name string, n int, affinity topology.Mask) error {
	settling := !m.sourcesReady()
	m.mu.Lock()
	cs, p, err := m.candidates(uid, container, name, n, affinity, settling)
	m.mu.Unlock()
	if err != nil || cs == nil {
		return err
	}
	var preferred preferFunc
	if p != nil && p.options.GetGetPreferredAllocationAvailable() {
		preferred = func(available, mustInclude []string, size int) ([]string, error) {
			return p.preferredAllocation(ctx, available, mustInclude, size)
		}
	}
	ids, err := cs.choose(preferred)
	if err != nil {
		return err
	}
	slices.Sort(ids)
	if p == nil {
		return fmt.Errorf("no device plugin is serving %s", name)
	}
	resp, err := p.allocate(ctx, ids)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cd := m.container(uid, container)
	cd.devices[name] = m.perNUMA(name, ids)
	cd.responses[name] = resp
	m.writeCheckpoint()
	klog.V(2).InfoS("Devices allocated", "podUID", uid, "container", container, "resource", name, "devices", ids)
	return nil
}

// candidates returns the devices container may be given of resource name, or nil when it holds
// n already. settling: the pod sources have not all been handled since nodelet started. Called
// with m.mu held.
func (m *Manager) candidates(uid types.UID, container, name string, n int, affinity topology.Mask, settling bool) (*candidates, *plugin, error) {
	held := m.pods[uid][container].held(name)
	if len(held) > 0 && len(held) != n {
		return nil, nil, fmt.Errorf("pod %q container %q changed request for resource %q from %d to %d", uid, container, name, len(held), n)
	}
	if len(held) == n && settling && slices.Contains(m.opts.RunningAtStart[uid], container) {
		// A nodelet restart: the container keeps its devices whatever their plugin has
		// reported so far (it may not have registered again yet), as upstream.
		return nil, nil, nil
	}
	r := m.resources[name]
	if err := usable(r, name, held); err != nil || len(held) == n {
		return nil, nil, err
	}
	cs := &candidates{required: n}
	if m.admission.pod == uid {
		cs.reused = slices.Clone(m.admission.reusable[name][:min(n, len(m.admission.reusable[name]))])
	}
	inUse := m.inUse(name)
	var available []string
	for id := range r.healthy() {
		if !inUse[id] {
			available = append(available, id)
		}
	}
	if need := n - len(cs.reused); len(available) < need {
		return nil, nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", name, need, len(available))
	}
	cs.sortByAffinity(r, available, affinity)
	var p *plugin
	if !r.stopped {
		p = r.plugin
	}
	return cs, p, nil
}

// sourcesReady reports whether every pod source has been handled and the pods in use are
// known (Options).
func (m *Manager) sourcesReady() bool {
	return m.opts.SourcesReady != nil && m.opts.InUse != nil && m.opts.SourcesReady()
}

// usable refuses devices of resource name (r: nil when never registered) when none is healthy
// or when one the container holds is not, in upstream's order and words: these are checked
// before the count, so a pod admitted before its plugin registered again (a node reboot) is
// told why.
func usable(r *pluginResource, name string, held []string) error {
	if r == nil {
		return fmt.Errorf("cannot allocate unregistered device %s", name)
	}
	healthy := r.healthy()
	if len(healthy) == 0 {
		return fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", name)
	}
	for _, id := range held {
		if !healthy[id] {
			return fmt.Errorf("previously allocated devices are no longer healthy; cannot allocate unhealthy devices %s", name)
		}
	}
	return nil
}

// perNUMA files ids under their devices' NUMA nodes, as the checkpoint keeps them. Called with
// m.mu held.
func (m *Manager) perNUMA(name string, ids []string) DevicesPerNUMA {
	out := DevicesPerNUMA{}
	for _, id := range ids {
		numa := m.resources[name].devices[id].numa
		if len(numa) == 0 {
			out[noNUMANode] = append(out[noNUMANode], id)
		}
		for _, node := range numa {
			out[node] = append(out[node], id)
		}
	}
	return out
}

// container returns the devices record of a container, creating it. Called with m.mu held.
func (m *Manager) container(uid types.UID, name string) *containerDevices {
	if m.pods[uid] == nil {
		m.pods[uid] = map[string]*containerDevices{}
	}
	cd := m.pods[uid][name]
	if cd == nil {
		cd = &containerDevices{devices: map[string]DevicesPerNUMA{}, responses: map[string]*pluginapi.ContainerAllocateResponse{}}
		m.pods[uid][name] = cd
	}
	return cd
}

// held returns the IDs of the devices of resource name the container holds; none for nil.
func (cd *containerDevices) held(name string) []string {
	if cd == nil {
		return nil
	}
	return cd.devices[name].IDs()
}

// requests returns the count c asks of each plugin resource. Extended resources cannot be
// overcommitted, so limits and requests agree; limits are read first as the API defaults
// requests from them. Called with m.mu held.
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

// inUse returns the devices of resource name held by any container. Called with m.mu held.
func (m *Manager) inUse(name string) map[string]bool {
	out := map[string]bool{}
	for _, containers := range m.pods {
		for _, cd := range containers {
			for _, id := range cd.held(name) {
				out[id] = true
			}
		}
	}
	return out
}

// Name names the per-pod state: the pod's plugin devices.
func (m *Manager) Name() string { return "devices" }

// ReleasePod frees the pod's devices (RemovePod).
func (m *Manager) ReleasePod(uid types.UID) error {
	m.RemovePod(uid)
	return nil
}
