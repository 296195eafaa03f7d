package runtime

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/containeropts"
)

func TestDevicesAreAddedToTheContainerConfig(t *testing.T) {
	var asked []string
	e := newTestEnv(t, func(o *Options) {
		o.Devices = func(_ context.Context, pod *v1.Pod, c *v1.Container) (*containeropts.DeviceAllocation, error) {
			asked = append(asked, pod.Name+"/"+c.Name)
			return &containeropts.DeviceAllocation{
				Envs:        map[string]string{"DEV": "0", "OWN": "plugin"},
				Mounts:      []*runtimeapi.Mount{{ContainerPath: "/run/dev", HostPath: "/var/run/dev", Readonly: true}},
				Devices:     []*runtimeapi.Device{{ContainerPath: "/dev/fake0", HostPath: "/dev/fake0", Permissions: "rw"}},
				Annotations: map[string]string{"dev.example.com/id": "0", container.AnnotationRestarts: "99"},
				CDIDevices:  []string{"example.com/dev=0"},
			}, nil
		}
	})
	app := ctr("app", "sleep", "1")
	app.Env = []v1.EnvVar{{Name: "OWN", Value: "container"}}
	if res := e.sync(newPod("gpu", app)); res.Err != nil {
		t.Fatalf("SyncPod: %v", res.Err)
	}
	if len(asked) != 1 || asked[0] != "gpu/app" {
		t.Errorf("devices asked for %v", asked)
	}
	cfg := e.running("app").Config
	envs := map[string]string{}
	for _, kv := range cfg.Envs {
		envs[kv.Key] = kv.Value
	}
	if envs["DEV"] != "0" || envs["OWN"] != "container" {
		t.Errorf("envs %v: want the plugin's DEV and the container's own OWN", envs)
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].HostPath != "/dev/fake0" || cfg.Devices[0].Permissions != "rw" {
		t.Errorf("devices %v", cfg.Devices)
	}
	found := false
	for _, m := range cfg.Mounts {
		found = found || (m.ContainerPath == "/run/dev" && m.HostPath == "/var/run/dev" && m.Readonly)
	}
	if !found {
		t.Errorf("plugin mount missing from %v", cfg.Mounts)
	}
	if cfg.Annotations["dev.example.com/id"] != "0" || cfg.Annotations[container.AnnotationRestarts] != "0" {
		t.Errorf("annotations %v: want the plugin's added and nodelet's kept", cfg.Annotations)
	}
	if len(cfg.CDIDevices) != 1 || cfg.CDIDevices[0].Name != "example.com/dev=0" {
		t.Errorf("CDI devices %v", cfg.CDIDevices)
	}
}

func TestDeviceAllocationFailureFailsContainerCreation(t *testing.T) {
	e := newTestEnv(t, func(o *Options) {
		o.Devices = func(context.Context, *v1.Pod, *v1.Container) (*containeropts.DeviceAllocation, error) {
			return nil, errors.New("plugin gone")
		}
	})
	res := e.sync(newPod("gpu", ctr("app", "sleep", "1")))
	if res.Err == nil || res.Waiting["app"].Reason != ReasonCreateContainerConfigError {
		t.Fatalf("err %v waiting %v, want CreateContainerConfigError", res.Err, res.Waiting)
	}
	if n := len(e.containersNamed("app")); n != 0 {
		t.Errorf("%d containers created without their devices", n)
	}
}
