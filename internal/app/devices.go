package app

import (
	"context"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/admission"
	"github.com/nodelet/nodelet/internal/containeropts"
	"github.com/nodelet/nodelet/internal/cri"
	"github.com/nodelet/nodelet/internal/deviceplugin"
)

// startDevicePlugins serves device plugin registrations at <root-dir>/device-plugins as one of
// the components. Without it nodelet still runs pods, only without plugin devices, so a failure is
// logged rather than fatal.
func startDevicePlugins(comps *components, rootDir string) *deviceplugin.Manager {
	m, err := deviceplugin.New(deviceplugin.Options{Dir: filepath.Join(rootDir, "device-plugins")})
	if err == nil {
		err = m.Listen()
	}
	if err != nil {
		klog.ErrorS(err, "Device plugins are not available")
		return nil
	}
	comps.start("device plugins", m.Run)
	return m
}

// admissionDevices keeps a missing device plugin manager a nil interface.
func admissionDevices(m *deviceplugin.Manager) admission.Devices {
	if m == nil {
		return nil
	}
	return m
}

// containerDevices adapts the device plugin manager to the runtime's Devices hook.
func containerDevices(m *deviceplugin.Manager) func(ctx context.Context, pod *v1.Pod, c *v1.Container) (*containeropts.DeviceAllocation, error) {
	return func(ctx context.Context, pod *v1.Pod, c *v1.Container) (*containeropts.DeviceAllocation, error) {
		a, err := m.Allocate(ctx, pod, c)
		if err != nil || a == nil {
			return nil, err
		}
		out := &containeropts.DeviceAllocation{Envs: a.Envs, Annotations: a.Annotations, CDIDevices: a.CDIDevices}
		for _, mnt := range a.Mounts {
			out.Mounts = append(out.Mounts, &cri.Mount{ContainerPath: mnt.ContainerPath, HostPath: mnt.HostPath, Readonly: mnt.ReadOnly})
		}
		for _, d := range a.Devices {
			out.Devices = append(out.Devices, &cri.Device{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions})
		}
		return out, nil
	}
}
