package volumes

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// expectedVolumes names the volumes pod's containers (init, app and ephemeral) mount or map,
// sorted: only those are set up, as upstream does.
func expectedVolumes(pod *v1.Pod) []string {
	seen := map[string]bool{}
	add := func(mounts []v1.VolumeMount, devices []v1.VolumeDevice) {
		for _, m := range mounts {
			seen[m.Name] = true
		}
		for _, d := range devices {
			seen[d.Name] = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.Containers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// resolve makes the desired state of pod: a spec and a plugin for each expected volume, or
// why there is none (no such volume, a claim that cannot be used, no plugin).
func (m *Manager) resolve(ctx context.Context, pod *v1.Pod) *desiredPod {
	dp := &desiredPod{pod: pod, volumes: map[string]desiredVolume{}, failed: map[string]error{}}
	for _, name := range expectedVolumes(pod) {
		spec, err := m.spec(ctx, pod, name)
		if err != nil {
			dp.failed[name] = err
			continue
		}
		plugin := m.pluginFor(spec)
		switch {
		case plugin == nil && spec.PV != nil:
			dp.failed[name] = fmt.Errorf("PV %s: its volume source is not supported by nodelet (hostPath and local are)", spec.PV.Name)
			continue
		case plugin == nil && spec.Volume.Image != nil:
			dp.failed[name] = fmt.Errorf("volume %q: no volume plugin matched: image volumes need the ImageVolume feature gate on", name)
			continue
		case plugin == nil:
			dp.failed[name] = fmt.Errorf("volume %q: unsupported volume type (nodelet supports emptyDir, hostPath, configMap, secret, downwardAPI, projected, csi, and persistentVolumeClaim and ephemeral volumes of hostPath, local and csi PersistentVolumes)", name)
			continue
		}
		dp.volumes[name] = desiredVolume{spec: spec, plugin: plugin}
	}
	return dp
}

func (m *Manager) spec(ctx context.Context, pod *v1.Pod, name string) (*Spec, error) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Name != name {
			continue
		}
		ref := ClaimOf(pod, vol)
		if ref == nil {
			return &Spec{Volume: vol}, nil
		}
		pvc, pv, err := m.claimedVolume(ctx, pod.Namespace, vol.Name, ref)
		if err != nil {
			return nil, err
		}
		if vol.Ephemeral != nil {
			if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
				return nil, err
			}
		}
		return &Spec{Volume: vol, PV: pv, Claim: pvc, ReadOnly: ref.ReadOnly}, nil
	}
	return nil, fmt.Errorf("volume mount %q: no such volume", name)
}

// ClaimOf is the claim a volume uses: a persistentVolumeClaim volume's, or the one the
// ephemeral volume controller creates for a generic ephemeral volume (<pod>-<volume>, owned by
// the pod); nil for the other volumes.
func ClaimOf(pod *v1.Pod, vol *v1.Volume) *v1.PersistentVolumeClaimVolumeSource {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim
	case vol.Ephemeral != nil:
		return &v1.PersistentVolumeClaimVolumeSource{ClaimName: ephemeral.VolumeClaimName(pod, vol)}
	}
	return nil
}

func (m *Manager) pluginFor(spec *Spec) Plugin {
	for _, p := range m.plugins {
		if p.CanSetUp(spec) {
			return p
		}
	}
	return nil
}

func (m *Manager) pluginNamed(name string) Plugin {
	for _, p := range m.plugins {
		if p.Name() == name {
			return p
		}
	}
	return nil
}
