package csi

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/nodelet/nodelet/internal/testutil"
	"github.com/nodelet/nodelet/internal/volumes/mount/mounttest"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// fakeObjects records what the registrar asks of the node's objects.
type fakeObjects struct {
	mu      sync.Mutex
	events  []string
	failing bool
}

func (f *fakeObjects) Initialize(context.Context) error { return nil }

func (f *fakeObjects) InstallDriver(_ context.Context, name string, info nodeInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "install "+name+" "+info.nodeID)
	return nil
}

func (f *fakeObjects) UninstallDriver(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "uninstall "+name)
	return nil
}

func (f *fakeObjects) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// startRegistrar runs a registrar on dir/plugins_registry until the test ends.
func startRegistrar(t *testing.T, dir string, objs NodeObjects) (*Registrar, *Drivers) {
	t.Helper()
	drivers := NewDrivers()
	r := NewRegistrar(filepath.Join(dir, "plugins_registry"), drivers, objs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-r.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("registrar not ready")
	}
	return r, drivers
}

func TestRegistrarRegistersADriverAndDeregistersItWhenItsSocketGoes(t *testing.T) {
	dir := shortDir(t)
	objs := &fakeObjects{}
	_, drivers := startRegistrar(t, dir, objs)

	endpoint := filepath.Join(dir, "csi.sock")
	serveUnix(t, endpoint, func(s *grpc.Server) { csipb.RegisterNodeServer(s, &fakeNode{mounter: mounttest.New(), stage: true}) })
	reg := &fakeRegistration{
		info:     registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: fakeDriver, Endpoint: endpoint, SupportedVersions: []string{"0.3.0", "1.0.0"}},
		statuses: make(chan *registerapi.RegistrationStatus, 4),
	}
	stopPlugin := serveUnix(t, filepath.Join(dir, "plugins_registry", "fake-reg.sock"), func(s *grpc.Server) {
		registerapi.RegisterRegistrationServer(s, reg)
	})
	awaitRegistered(t, reg)
	d, err := drivers.get(fakeDriver)
	if err != nil {
		t.Fatal(err)
	}
	if d.info.nodeID != "node-1" || d.info.maxVolumes != 7 || !d.caps[csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		t.Fatalf("driver = %+v", d)
	}
	if got := objs.seen(); !slices.Equal(got, []string{"install fake.csi node-1"}) {
		t.Fatalf("node objects = %q", got)
	}

	stopPlugin() // the listener removes its socket
	testutil.Eventually(t, "deregistration", func() bool { _, err := drivers.get(fakeDriver); return err != nil })
	testutil.Eventually(t, "the CSINode entry removed", func() bool { return len(objs.seen()) == 2 && objs.seen()[1] == "uninstall fake.csi" })
}

func TestRegistrarRefusesOtherPluginTypesAndOldVersions(t *testing.T) {
	dir := shortDir(t)
	_, drivers := startRegistrar(t, dir, nil)
	for i, info := range []registerapi.PluginInfo{
		{Type: registerapi.DevicePlugin, Name: "dp.example", SupportedVersions: []string{"v1beta1"}},
		{Type: registerapi.CSIPlugin, Name: "old.csi", SupportedVersions: []string{"0.3.0"}},
	} {
		reg := &fakeRegistration{info: info, statuses: make(chan *registerapi.RegistrationStatus, 4)}
		serveUnix(t, filepath.Join(dir, "plugins_registry", "p"+string(rune('0'+i))+".sock"), func(s *grpc.Server) {
			registerapi.RegisterRegistrationServer(s, reg)
		})
		select {
		case st := <-reg.statuses:
			if st.PluginRegistered || st.Error == "" {
				t.Fatalf("%s: registered = %v, error %q; want a refusal", info.Name, st.PluginRegistered, st.Error)
			}
			if info.Type == registerapi.CSIPlugin && !strings.Contains(st.Error, "nodelet speaks CSI 1.x") {
				t.Fatalf("%s: error %q", info.Name, st.Error)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: never told its registration status", info.Name)
		}
	}
	if names := drivers.Names(); len(names) != 0 {
		t.Fatalf("registered %v", names)
	}
}

func TestRegistrarRegistersSocketsPresentAtStart(t *testing.T) {
	dir := shortDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "plugins_registry"), 0o750); err != nil {
		t.Fatal(err)
	}
	endpoint := filepath.Join(dir, "csi.sock")
	serveUnix(t, endpoint, func(s *grpc.Server) { csipb.RegisterNodeServer(s, &fakeNode{mounter: mounttest.New()}) })
	reg := &fakeRegistration{
		info:     registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: fakeDriver, Endpoint: endpoint, SupportedVersions: []string{"1.2.0"}},
		statuses: make(chan *registerapi.RegistrationStatus, 4),
	}
	serveUnix(t, filepath.Join(dir, "plugins_registry", "fake-reg.sock"), func(s *grpc.Server) {
		registerapi.RegisterRegistrationServer(s, reg)
	})
	_, drivers := startRegistrar(t, dir, nil)
	if _, err := drivers.get(fakeDriver); err != nil {
		t.Fatalf("a socket present at start is registered before Ready: %v", err)
	}
}

// fakeHandler records what the registrar hands a handler of another plugin type.
type fakeHandler struct {
	mu     sync.Mutex
	events []string
}

func (h *fakeHandler) RegisterPlugin(_ context.Context, name, endpoint string, versions []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, "register "+name+" "+filepath.Base(endpoint)+" "+strings.Join(versions, ","))
	return nil
}

func (h *fakeHandler) DeregisterPlugin(name, endpoint string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, "deregister "+name+" "+filepath.Base(endpoint))
}

func (h *fakeHandler) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func TestRegistrarHandsAHandledTypeToItsHandler(t *testing.T) {
	dir := shortDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "plugins_registry"), 0o750); err != nil {
		t.Fatal(err)
	}
	drivers := NewDrivers()
	r := NewRegistrar(filepath.Join(dir, "plugins_registry"), drivers, nil)
	h := &fakeHandler{}
	r.Handle(registerapi.DRAPlugin, h)
	testutil.Start(t, r.Run)

	reg := &fakeRegistration{
		info:     registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: "dra.example", Endpoint: filepath.Join(dir, "dra.sock"), SupportedVersions: []string{"v1beta1.DRAPlugin"}},
		statuses: make(chan *registerapi.RegistrationStatus, 4),
	}
	stop := serveUnix(t, filepath.Join(dir, "plugins_registry", "dra-reg.sock"), func(s *grpc.Server) {
		registerapi.RegisterRegistrationServer(s, reg)
	})
	awaitRegistered(t, reg)
	stop()
	testutil.Eventually(t, "deregistration", func() bool { return len(h.seen()) == 2 })
	want := []string{"register dra.example dra.sock v1beta1.DRAPlugin", "deregister dra.example dra.sock"}
	if got := h.seen(); !slices.Equal(got, want) {
		t.Fatalf("handler saw %q, want %q", got, want)
	}
	if names := drivers.Names(); len(names) != 0 {
		t.Fatalf("CSI drivers registered: %v", names)
	}
}

// awaitRegistered fails the test unless the plugin is told it was registered.
func awaitRegistered(t *testing.T, reg *fakeRegistration) {
	t.Helper()
	select {
	case st := <-reg.statuses:
		if !st.PluginRegistered {
			t.Fatalf("registration refused: %s", st.Error)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin was never told its registration status")
	}
}
