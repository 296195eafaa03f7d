package deviceplugin

import (
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/testutil"
)

const testResource = "example.com/dev"

func TestAllocatableFollowsDeviceHealth(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy))
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{2, 2})

	p.updates <- []*pluginapi.Device{device("0", pluginapi.Healthy), device("1", pluginapi.Unhealthy)}
	waitCounts(t, m, testResource, counts{2, 1})
	p.updates <- []*pluginapi.Device{device("0", pluginapi.Unhealthy), device("1", pluginapi.Unhealthy)}
	waitCounts(t, m, testResource, counts{2, 0})
	p.updates <- []*pluginapi.Device{device("0", pluginapi.Healthy), device("1", pluginapi.Healthy)}
	waitCounts(t, m, testResource, counts{2, 2})

	// A device that disappears from the list leaves capacity.
	p.updates <- []*pluginapi.Device{device("1", pluginapi.Healthy)}
	waitCounts(t, m, testResource, counts{1, 1})
	if got := p.Calls(); strings.Join(got, ",") != "GetDevicePluginOptions,ListAndWatch" {
		t.Errorf("plugin calls %v", got)
	}
}

func TestChangesAreAnnounced(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy))
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{1, 1})
	drain(m)
	p.updates <- []*pluginapi.Device{device("0", pluginapi.Unhealthy)}
	select {
	case <-m.Changes():
	case <-time.After(10 * time.Second):
		t.Fatal("no change announced after a device became unhealthy")
	}
	if got := resourceCounts(m, testResource); got != (counts{1, 0}) {
		t.Errorf("after the announcement counts = %v, want {1 0}", got)
	}
}

func drain(m *Manager) {
	for {
		select {
		case <-m.Changes():
		default:
			return
		}
	}
}

func TestFailingOptionsLeavesPluginUnused(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy))
	p.optionsErr = errInjected
	err := p.register(m, testResource)
	if err == nil || !strings.Contains(err.Error(), "failed to get device plugin options") || !strings.Contains(err.Error(), errInjected.Error()) {
		t.Fatalf("Register error = %v, want the options failure", err)
	}
	if got := p.Calls(); len(got) != 1 || got[0] != "GetDevicePluginOptions" {
		t.Errorf("plugin calls %v, want only GetDevicePluginOptions", got)
	}
	if got := resourceCounts(m, testResource); got != (counts{-1, -1}) {
		t.Errorf("counts = %v, want the resource absent", got)
	}
	if m.Manages(testResource) {
		t.Error("a plugin that failed its options call manages its resource")
	}
}

func TestListAndWatchFailingAtOnceReportsZero(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy))
	p.listErr = errInjected
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "ListAndWatch called", func() bool { return len(p.Calls()) == 2 })
	waitCounts(t, m, testResource, counts{0, 0})
	time.Sleep(300 * time.Millisecond) // a retry would show up here
	if got := p.Calls(); len(got) != 2 {
		t.Errorf("plugin calls %v: the stream was reopened", got)
	}
}

func TestListAndWatchFailureZeroesAllocatableThenCapacity(t *testing.T) {
	const grace = 5 * time.Minute
	fakeClock := testingclock.NewFakeClock(time.Now())
	m, dir := startManagerWith(t, Options{StopGracePeriod: grace, Clock: fakeClock})
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy))
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{2, 2})
	p.fail <- errInjected
	waitCounts(t, m, testResource, counts{2, 0})
	testutil.Eventually(t, "the grace period's timer", fakeClock.HasWaiters)
	// Within the grace period the devices stay in capacity.
	fakeClock.Step(grace - time.Second)
	time.Sleep(100 * time.Millisecond) // an early expiry would show up here
	if got := resourceCounts(m, testResource); got != (counts{2, 0}) {
		t.Fatalf("counts %v before the grace period ended, want {2 0}", got)
	}
	// After it the resource stays reported, at zero.
	fakeClock.Step(time.Second)
	waitCounts(t, m, testResource, counts{0, 0})
	time.Sleep(100 * time.Millisecond) // a reopened stream would show up here
	if got := p.Calls(); len(got) != 2 {
		t.Errorf("plugin calls %v: the stream was reopened", got)
	}
	if got := resourceCounts(m, testResource); got != (counts{0, 0}) {
		t.Errorf("counts = %v, want {0 0}", got)
	}
}

func TestStoppedPluginCanRegisterAgain(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy))
	if err := p.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{1, 1})
	p.server.Stop()
	waitCounts(t, m, testResource, counts{1, 0})

	again := newFakePlugin(t, dir, "p2.sock", device("0", pluginapi.Healthy), device("1", pluginapi.Healthy))
	if err := again.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{2, 2})
}

func TestNewRegistrationReplacesTheOldPlugin(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	old := newFakePlugin(t, dir, "old.sock", device("a", pluginapi.Healthy))
	if err := old.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{1, 1})
	repl := newFakePlugin(t, dir, "new.sock", device("x", pluginapi.Healthy), device("y", pluginapi.Healthy), device("z", pluginapi.Unhealthy))
	if err := repl.register(m, testResource); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, m, testResource, counts{3, 2})
	old.server.Stop() // the replaced plugin going away does not touch the new one's devices
	time.Sleep(100 * time.Millisecond)
	if got := resourceCounts(m, testResource); got != (counts{3, 2}) {
		t.Errorf("counts after the old plugin stopped = %v, want {3 2}", got)
	}
}

func TestRegistrationIsValidated(t *testing.T) {
	m, dir := startManager(t, time.Hour)
	p := newFakePlugin(t, dir, "p.sock", device("0", pluginapi.Healthy))
	for _, name := range []string{"gpu", "kubernetes.io/gpu", "example.com/", "requests.example.com/gpu", "bad domain/gpu"} {
		if err := p.register(m, name); err == nil {
			t.Errorf("resource %q accepted", name)
		}
	}
	if err := validateResourceName("vendor.example.com/gpu-1"); err != nil {
		t.Errorf("valid name refused: %v", err)
	}
	if err := sendRegister(m, &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "../p.sock", ResourceName: testResource}); err == nil {
		t.Error("endpoint outside the plugin directory accepted")
	}
	if err := sendRegister(m, &pluginapi.RegisterRequest{Version: "v1alpha", Endpoint: "p.sock", ResourceName: testResource}); err == nil {
		t.Error("unsupported version accepted")
	}
	if got := p.Calls(); len(got) != 0 {
		t.Errorf("refused registrations called the plugin: %v", got)
	}
	capacity, _ := m.Resources()
	if len(capacity) != 0 {
		t.Errorf("refused registrations reported resources %v", capacity)
	}
}
