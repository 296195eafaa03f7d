package deviceplugin

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// restarted admits pod on a first manager, stops it and starts a second one on the same
// directory whose plugin has not registered again, as after a nodelet restart.
func restarted(t *testing.T, uid string, opts Options) *Manager {
	t.Helper()
	dir := filepath.Join(shortDir(t), "device-plugins")
	first, stop := runManager(t, dir)
	plugged(t, first, "p1.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy))
	if err := admit(first, podWith(uid, testResource, 1)); err != nil {
		t.Fatal(err)
	}
	stop()
	second, _ := runManagerWith(t, dir, opts)
	return second
}

const noHealthy = "no healthy devices present; cannot allocate unhealthy devices " + testResource

func TestARunningContainerKeepsItsDevicesUntilTheSourcesAreHandled(t *testing.T) {
	ready := false
	m := restarted(t, "held", Options{
		InUse: func() []types.UID { return nil }, SourcesReady: func() bool { return ready },
		RunningAtStart: map[types.UID][]string{"held": {"c0"}},
	})
	if err := admit(m, podWith("held", testResource, 1)); err != nil {
		t.Fatalf("running container refused before its plugin registered again: %v", err)
	}
	if got := m.ContainerDevices("held", "c0"); len(got) != 1 {
		t.Errorf("devices %v after readmission, want the restored one", got)
	}
	ready = true
	err := admit(m, podWith("held", testResource, 1))
	if err == nil || err.Error() != noHealthy {
		t.Fatalf("readmitted once the sources were handled: %v, want %q", err, noHealthy)
	}
}

func TestAPodAdmittedBeforeItsPluginRegistersIsToldNoDeviceIsHealthy(t *testing.T) {
	m := restarted(t, "held", Options{
		InUse: func() []types.UID { return nil }, SourcesReady: func() bool { return false },
		RunningAtStart: map[types.UID][]string{"other": {"c0"}},
	})
	// Its container is gone (a node reboot): the restored devices do not let it in.
	err := admit(m, podWith("held", testResource, 1))
	if err == nil || err.Error() != noHealthy {
		t.Fatalf("pod holding devices: %v, want %q", err, noHealthy)
	}
	if got := m.ContainerDevices("held", "c0"); got != nil {
		t.Errorf("refused pod still holds %v", got)
	}
	err = admit(m, podWith("new", testResource, 2))
	if err == nil || err.Error() != noHealthy {
		t.Fatalf("new pod: %v, want %q", err, noHealthy)
	}
}

func TestHeldDevicesThatTurnedUnhealthyRefuseTheContainer(t *testing.T) {
	m, p := registeredPlugin(t, 2)
	pod := podWith("a", testResource, 1)
	if err := admit(m, pod); err != nil {
		t.Fatal(err)
	}
	held := m.ContainerDevices("a", "c0")[0].DeviceIds[0]
	other := map[string]string{"0": "1", "1": "0"}[held]
	p.updates <- []*pluginapi.Device{device(held, pluginapi.Unhealthy), device(other, pluginapi.Healthy)}
	waitCounts(t, m, testResource, counts{2, 1})
	err := admit(m, pod)
	if err == nil || !strings.HasPrefix(err.Error(), "previously allocated devices are no longer healthy") {
		t.Fatalf("readmission onto an unhealthy device: %v", err)
	}
}
