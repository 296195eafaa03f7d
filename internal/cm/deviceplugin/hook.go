package deviceplugin

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/podspec/podhooks"
)

var _ podhooks.Container = (*Manager)(nil)

// ApplyContainer is the device plugin manager's container hook: it adds the container's
// device setup (ContainerSetup) to its config. An error fails the container's creation, which
// is retried.
func (m *Manager) ApplyContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	a, err := m.ContainerSetup(ctx, pod, c)
	if err != nil {
		return fmt.Errorf("allocating devices: %w", err)
	}
	if a != nil {
		a.applyTo(cfg)
	}
	return nil
}

// applyTo adds the setup to cfg. The container's own environment and nodelet's annotations
// win over what a plugin sets.
func (a *Allocation) applyTo(cfg *runtimeapi.ContainerConfig) {
	set := map[string]bool{}
	for _, kv := range cfg.Envs {
		set[kv.Key] = true
	}
	for _, k := range slices.Sorted(maps.Keys(a.Envs)) {
		if !set[k] {
			cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: a.Envs[k]})
		}
	}
	for _, mnt := range a.Mounts {
		cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: mnt.ContainerPath, HostPath: mnt.HostPath, Readonly: mnt.ReadOnly})
	}
	for _, d := range a.Devices {
		cfg.Devices = append(cfg.Devices, &runtimeapi.Device{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions})
	}
	for _, name := range a.CDIDevices {
		cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: name})
	}
	if len(a.Annotations) > 0 && cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	for k, v := range a.Annotations {
		if _, ok := cfg.Annotations[k]; !ok {
			cfg.Annotations[k] = v
		}
	}
}
