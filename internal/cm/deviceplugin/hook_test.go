package deviceplugin

import (
	"context"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// The hook adds the plugin's setup to the container's config.
func TestContainerHookAddsThePluginsSetup(t *testing.T) {
	m, _ := registeredPlugin(t, 2)
	pod := podWith("a", testResource, 2)
	if err := admit(m, pod); err != nil {
		t.Fatal(err)
	}
	cfg := &runtimeapi.ContainerConfig{}
	if err := m.ApplyContainer(context.Background(), pod, &pod.Spec.Containers[0], cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Envs) != 1 || cfg.Envs[0].Key != "FAKE_DEVICES" || cfg.Envs[0].Value != "0,1" {
		t.Errorf("envs %v", cfg.Envs)
	}
	if len(cfg.Devices) != 2 || cfg.Devices[0].HostPath != "/dev/fake0" || len(cfg.Mounts) != 2 || !cfg.Mounts[0].Readonly {
		t.Errorf("devices %v mounts %v", cfg.Devices, cfg.Mounts)
	}
}

// A plugin refusing the devices fails the container's creation, saying what failed.
func TestContainerHookFailsWhenThePluginRefuses(t *testing.T) {
	m, p := registeredPlugin(t, 1)
	p.mu.Lock()
	p.failDevice = "0"
	p.mu.Unlock()
	pod := podWith("a", testResource, 1)
	err := m.ApplyContainer(context.Background(), pod, &pod.Spec.Containers[0], &runtimeapi.ContainerConfig{})
	if err == nil || !strings.HasPrefix(err.Error(), "allocating devices: ") {
		t.Errorf("err %v, want an allocating devices error", err)
	}
}

// The container's own environment and nodelet's annotations win over a plugin's; the rest is
// added as the plugin gave it.
func TestSetupMergesIntoTheConfig(t *testing.T) {
	a := &Allocation{
		Envs:        map[string]string{"DEV": "0", "OWN": "plugin"},
		Mounts:      []*pluginapi.Mount{{ContainerPath: "/run/dev", HostPath: "/var/run/dev", ReadOnly: true}},
		Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/fake0", HostPath: "/dev/fake0", Permissions: "rw"}},
		Annotations: map[string]string{"dev.example.com/id": "0", "io.kubernetes.container.restartCount": "99"},
		CDIDevices:  []string{"example.com/dev=0"},
	}
	cfg := &runtimeapi.ContainerConfig{
		Envs:        []*runtimeapi.KeyValue{{Key: "OWN", Value: "container"}},
		Annotations: map[string]string{"io.kubernetes.container.restartCount": "0"},
	}
	a.applyTo(cfg)
	envs := map[string]string{}
	for _, kv := range cfg.Envs {
		envs[kv.Key] = kv.Value
	}
	if len(envs) != 2 || envs["DEV"] != "0" || envs["OWN"] != "container" {
		t.Errorf("envs %v: want the plugin's DEV and the container's own OWN", envs)
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].HostPath != "/dev/fake0" || cfg.Devices[0].Permissions != "rw" {
		t.Errorf("devices %v", cfg.Devices)
	}
	if len(cfg.Mounts) != 1 || cfg.Mounts[0].ContainerPath != "/run/dev" || cfg.Mounts[0].HostPath != "/var/run/dev" || !cfg.Mounts[0].Readonly {
		t.Errorf("mounts %v", cfg.Mounts)
	}
	if cfg.Annotations["dev.example.com/id"] != "0" || cfg.Annotations["io.kubernetes.container.restartCount"] != "0" {
		t.Errorf("annotations %v: want the plugin's added and nodelet's kept", cfg.Annotations)
	}
	if len(cfg.CDIDevices) != 1 || cfg.CDIDevices[0].Name != "example.com/dev=0" {
		t.Errorf("CDI devices %v", cfg.CDIDevices)
	}
}
