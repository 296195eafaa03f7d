package containeropts

import (
	"maps"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DeviceAllocation is what device plugins add to one container's runtime config.
type DeviceAllocation struct {
	Envs        map[string]string
	Mounts      []*runtimeapi.Mount
	Devices     []*runtimeapi.Device
	Annotations map[string]string
	// CDIDevices are fully qualified CDI device names (vendor.com/class=name).
	CDIDevices []string
}

// ApplyDevices adds a device plugins' allocation to cfg. The container's own environment and
// nodelet's annotations win over what a plugin sets.
func ApplyDevices(cfg *runtimeapi.ContainerConfig, a *DeviceAllocation) {
	set := map[string]bool{}
	for _, kv := range cfg.Envs {
		set[kv.Key] = true
	}
	for _, k := range slices.Sorted(maps.Keys(a.Envs)) {
		if !set[k] {
			cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: k, Value: a.Envs[k]})
		}
	}
	cfg.Mounts = append(cfg.Mounts, a.Mounts...)
	cfg.Devices = append(cfg.Devices, a.Devices...)
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
