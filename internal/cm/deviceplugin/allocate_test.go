package deviceplugin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// registeredPlugin starts a manager with one plugin serving n healthy devices "0".."n-1".
func registeredPlugin(t *testing.T, n int) (*Manager, *fakePlugin) {
	t.Helper()
	return registeredPluginWith(t, n, Options{})
}

// registeredPluginWith is registeredPlugin with a manager made with opts.
func registeredPluginWith(t *testing.T, n int, opts Options) (*Manager, *fakePlugin) {
	t.Helper()
	opts.StopGracePeriod = time.Hour
	m, dir := startManagerWith(t, opts)
	var devices []*pluginapi.Device
	for i := range n {
		devices = append(devices, device(string(rune('0'+i)), pluginapi.Healthy))
	}
	p := newFakePlugin(t, dir, "p.sock", devices...)
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{int64(n), int64(n)})
	return m, p
}

func allocate(t *testing.T, m *Manager, pod *v1.Pod, i int) *Allocation {
	t.Helper()
	a, err := m.ContainerSetup(context.Background(), pod, &pod.Spec.Containers[i])
	if err != nil {
		t.Fatalf("Allocate %s/%s: %v", pod.Name, pod.Spec.Containers[i].Name, err)
	}
	return a
}

func TestAllocateReturnsThePluginsSetup(t *testing.T) {
	m, p := registeredPlugin(t, 2)
	pod := podWith("a", testResource, 2)
	if err := admit(m, pod); err != nil {
		t.Fatal(err)
	}
	a := allocate(t, m, pod, 0)
	if a.Envs["FAKE_DEVICES"] != "0,1" || a.Annotations["fake.example.com/devices"] != "0,1" {
		t.Errorf("envs %v annotations %v, want the plugin's", a.Envs, a.Annotations)
	}
	if len(a.Devices) != 2 || a.Devices[0].HostPath != "/dev/fake0" || a.Devices[1].Permissions != "rw" {
		t.Errorf("devices %v", a.Devices)
	}
	if len(a.Mounts) != 2 || a.Mounts[0].ContainerPath != "/run/fake/0" || !a.Mounts[0].ReadOnly {
		t.Errorf("mounts %v", a.Mounts)
	}
	// A restarted container gets the same devices without asking the plugin again.
	again := allocate(t, m, pod, 0)
	if again.Envs["FAKE_DEVICES"] != "0,1" {
		t.Errorf("restart envs %v", again.Envs)
	}
	if got := strings.Count(strings.Join(p.Calls(), ","), "Allocate"); got != 1 {
		t.Errorf("plugin Allocate called %d times, want 1", got)
	}
	if got := strings.Count(strings.Join(p.Calls(), ","), "PreStartContainer"); got != 0 {
		t.Errorf("PreStartContainer called %d times without being asked for", got)
	}
}

func TestDevicesAreNeverShared(t *testing.T) {
	m, p := registeredPlugin(t, 3)
	a, b, c := podWith("a", testResource, 1), podWith("b", testResource, 1, 1), podWith("c", testResource, 1)
	if err := admit(m, a); err != nil {
		t.Fatal(err)
	}
	if err := admit(m, b); err != nil {
		t.Fatal(err)
	}
	err := admit(m, c)
	if err == nil || !strings.Contains(err.Error(), "requested number of devices unavailable for example.com/dev. Requested: 1, Available: 0") {
		t.Fatalf("third pod admitted with every device taken: %v", err)
	}
	seen := map[string]bool{}
	for _, pc := range []struct {
		pod *v1.Pod
		i   int
	}{{a, 0}, {b, 0}, {b, 1}} {
		id := allocate(t, m, pc.pod, pc.i).Envs["FAKE_DEVICES"]
		if seen[id] {
			t.Errorf("device %s handed out twice", id)
		}
		seen[id] = true
	}
	// Removing a pod frees its device for the next one.
	m.RemovePod(a.UID)
	if err := admit(m, c); err != nil {
		t.Fatalf("after removing a: %v", err)
	}
	if got := allocate(t, m, c, 0).Envs["FAKE_DEVICES"]; got != "0" {
		t.Errorf("c got %q, want a's device 0", got)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.allocated) != 4 {
		t.Errorf("plugin saw %d Allocate requests, want 4", len(p.allocated))
	}
}

func TestInactivePodsReleaseTheirDevices(t *testing.T) {
	var inUse []types.UID
	ready := false
	m, _ := registeredPluginWith(t, 1, Options{InUse: func() []types.UID { return inUse }, SourcesReady: func() bool { return ready }})
	done, next := podWith("done", testResource, 1), podWith("next", testResource, 1)
	if err := admit(m, done); err != nil {
		t.Fatal(err)
	}
	if err := admit(m, next); err == nil {
		t.Fatal("devices freed before every pod source was seen")
	}
	ready, inUse = true, []types.UID{done.UID}
	if err := admit(m, next); err == nil {
		t.Fatal("admitted with the only device held by a pod in use")
	}
	inUse = nil
	if err := admit(m, next); err != nil {
		t.Fatalf("device of a finished pod not freed: %v", err)
	}
}

func TestUnhealthyDevicesAreNotHandedOut(t *testing.T) {
	m, p := registeredPlugin(t, 2)
	p.updates <- []*pluginapi.Device{device("0", pluginapi.Unhealthy), device("1", pluginapi.Healthy)}
	waitCounts(t, m, testResource, counts{2, 1})
	pod := podWith("a", testResource, 1)
	if err := admit(m, pod); err != nil {
		t.Fatal(err)
	}
	if got := allocate(t, m, pod, 0).Envs["FAKE_DEVICES"]; got != "1" {
		t.Errorf("got device %q, want the healthy 1", got)
	}
	if err := admit(m, podWith("b", testResource, 1)); err == nil {
		t.Error("admitted onto an unhealthy device")
	}
}

func TestInitContainerDevicesPassToAppContainers(t *testing.T) {
	m, _ := registeredPlugin(t, 2)
	pod := podWith("a", testResource, 2)
	rl := v1.ResourceList{testResource: *resource.NewQuantity(2, resource.DecimalSI)}
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Limits: rl, Requests: rl}}}
	if err := admit(m, pod); err != nil {
		t.Fatalf("init and app container could not share: %v", err)
	}
	init, err := m.ContainerSetup(context.Background(), pod, &pod.Spec.InitContainers[0])
	if err != nil {
		t.Fatal(err)
	}
	if app := allocate(t, m, pod, 0); app.Envs["FAKE_DEVICES"] != init.Envs["FAKE_DEVICES"] {
		t.Errorf("app %v, init %v: want the same devices", app.Envs, init.Envs)
	}

	// A sidecar keeps its devices while the app containers run.
	sidecar := podWith("b", testResource, 1)
	always := v1.ContainerRestartPolicyAlways
	sidecar.Spec.InitContainers = []v1.Container{{Name: "side", RestartPolicy: &always, Resources: sidecar.Spec.Containers[0].Resources}}
	m.RemovePod(pod.UID)
	if err := admit(m, sidecar); err != nil {
		t.Fatalf("sidecar pod with 2 of 2 devices: %v", err)
	}
	side, _ := m.ContainerSetup(context.Background(), sidecar, &sidecar.Spec.InitContainers[0])
	if app := allocate(t, m, sidecar, 0); app.Envs["FAKE_DEVICES"] == side.Envs["FAKE_DEVICES"] {
		t.Errorf("sidecar and app container share device %s", side.Envs["FAKE_DEVICES"])
	}
}

func TestPreStartContainerWhenAskedFor(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy))
	p.options.PreStartRequired = true
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{1, 1})
	pod := podWith("a", testResource, 1)
	allocate(t, m, pod, 0) // not admitted: devices are picked on first use
	allocate(t, m, pod, 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.preStarts) != 2 || !slices.Equal(p.preStarts[1], []string{"0"}) {
		t.Errorf("PreStartContainer requests %v, want two for device 0", p.preStarts)
	}
}

func TestAllocateIgnoresOtherResources(t *testing.T) {
	m, p := registeredPlugin(t, 1)
	pod := podWith("a", "other.example.com/thing", 1)
	if err := admit(m, pod); err != nil {
		t.Fatalf("a resource no plugin serves is not this manager's to refuse: %v", err)
	}
	if a := allocate(t, m, pod, 0); a != nil {
		t.Errorf("allocation %v for a container requesting no plugin resource", a)
	}
	if got := p.Calls(); slices.Contains(got, "Allocate") {
		t.Errorf("plugin called: %v", got)
	}
}

func TestAPluginGoneKeepsWhatItPrepared(t *testing.T) {
	m, p := registeredPlugin(t, 2)
	pod := podWith("a", testResource, 1)
	if err := admit(m, pod); err != nil {
		t.Fatal(err)
	}
	p.server.Stop()
	waitCounts(t, m, testResource, counts{2, 0})
	if err := admit(m, podWith("b", testResource, 1)); err == nil {
		t.Error("admitted with no plugin to prepare the device")
	}
	// The container admitted before restarts with the plugin's kept answer.
	if got := allocate(t, m, pod, 0).Envs["FAKE_DEVICES"]; got != "0" {
		t.Errorf("kept setup %q, want device 0", got)
	}
}

func TestPluginAllocateFailureRefusesAndFrees(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy))
	p.mu.Lock()
	p.failDevice = "1"
	p.mu.Unlock()
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{2, 2})
	pod := podWith("a", testResource, 1, 1)
	if err := admit(m, pod); err == nil || !strings.Contains(err.Error(), errInjected.Error()) {
		t.Fatalf("admission error %v, want the plugin's", err)
	}
	if got := m.ContainerDevices(pod.UID, "c0"); got != nil {
		t.Errorf("refused pod holds %v", got)
	}
	p.mu.Lock()
	p.failDevice = ""
	p.mu.Unlock()
	if err := admit(m, podWith("b", testResource, 2)); err != nil {
		t.Errorf("the refused pod's device was not freed: %v", err)
	}
}
