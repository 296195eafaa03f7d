package deviceplugin

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/testutil"
)

// fakePlugin is a real device plugin gRPC server on a unix socket, driven by the test.
type fakePlugin struct {
	endpoint   string // socket name inside the plugin directory
	server     *grpc.Server
	options    pluginapi.DevicePluginOptions
	optionsErr error
	listErr    error // ListAndWatch fails at once with it
	// prefer answers GetPreferredAllocation; nil answers no preference.
	prefer  func(*pluginapi.ContainerPreferredAllocationRequest) []string
	updates chan []*pluginapi.Device // a new device list to send
	fail    chan error               // makes the open ListAndWatch return the error

	mu         sync.Mutex
	failDevice string // Allocate fails for a request including it
	devices    []*pluginapi.Device
	calls      []string
	allocated  [][]string
	preStarts  [][]string
}

func newFakePlugin(t *testing.T, dir, endpoint string, devices ...*pluginapi.Device) *fakePlugin {
	t.Helper()
	p := &fakePlugin{endpoint: endpoint, devices: devices, updates: make(chan []*pluginapi.Device), fail: make(chan error)}
	lis, err := net.Listen("unix", filepath.Join(dir, endpoint))
	if err != nil {
		t.Fatal(err)
	}
	p.server = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(p.server, p)
	go p.server.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(p.server.Stop)
	return p
}

func (p *fakePlugin) record(call string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
}

func (p *fakePlugin) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

func (p *fakePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	p.record("GetDevicePluginOptions")
	if p.optionsErr != nil {
		return nil, p.optionsErr
	}
	return &p.options, nil
}

func (p *fakePlugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	p.record("ListAndWatch")
	if p.listErr != nil {
		return p.listErr
	}
	p.mu.Lock()
	initial := p.devices
	p.mu.Unlock()
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: initial}); err != nil {
		return err
	}
	for {
		select {
		case devices := <-p.updates:
			if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devices}); err != nil {
				return err
			}
		case err := <-p.fail:
			return err
		case <-stream.Context().Done():
			return nil
		}
	}
}

func (p *fakePlugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	p.record("GetPreferredAllocation")
	out := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.ContainerRequests {
		var ids []string
		if p.prefer != nil {
			ids = p.prefer(cr)
		}
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return out, nil
}

// Allocate answers with an env naming the devices and one device node per device.
func (p *fakePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	p.record("Allocate")
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		p.mu.Lock()
		if slices.Contains(cr.DevicesIDs, p.failDevice) {
			p.mu.Unlock()
			return nil, errInjected
		}
		p.allocated = append(p.allocated, cr.DevicesIDs)
		p.mu.Unlock()
		resp := &pluginapi.ContainerAllocateResponse{
			Envs:        map[string]string{"FAKE_DEVICES": strings.Join(cr.DevicesIDs, ",")},
			Annotations: map[string]string{"fake.example.com/devices": strings.Join(cr.DevicesIDs, ",")},
		}
		for _, id := range cr.DevicesIDs {
			resp.Devices = append(resp.Devices, &pluginapi.DeviceSpec{ContainerPath: "/dev/fake" + id, HostPath: "/dev/fake" + id, Permissions: "rw"})
			resp.Mounts = append(resp.Mounts, &pluginapi.Mount{ContainerPath: "/run/fake/" + id, HostPath: "/var/run/fake/" + id, ReadOnly: true})
		}
		out.ContainerResponses = append(out.ContainerResponses, resp)
	}
	return out, nil
}

func (p *fakePlugin) PreStartContainer(_ context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	p.record("PreStartContainer")
	p.mu.Lock()
	p.preStarts = append(p.preStarts, req.DevicesIDs)
	p.mu.Unlock()
	return &pluginapi.PreStartContainerResponse{}, nil
}

// register calls the manager's Registration service over its socket, as a plugin does.
func (p *fakePlugin) register(m *Manager, resourceName string) error {
	return sendRegister(m, &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: p.endpoint, ResourceName: resourceName})
}

func sendRegister(m *Manager, req *pluginapi.RegisterRequest) error {
	conn, err := grpc.NewClient("unix://"+m.SocketPath(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, req)
	return err
}

// shortDir is a temporary directory whose socket paths stay within the unix path limit.
func shortDir(t *testing.T) string { return testutil.ShortDir(t, "dp") }

// startManager starts a Manager on a fresh directory; the grace period is short for tests.
func startManager(t *testing.T, grace time.Duration) (*Manager, string) {
	t.Helper()
	return startManagerWith(t, Options{StopGracePeriod: grace})
}

// startManagerWith starts a manager with opts in a directory of the test's own.
func startManagerWith(t *testing.T, opts Options) (*Manager, string) {
	t.Helper()
	opts.Dir = filepath.Join(shortDir(t), "device-plugins")
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, m.Run)
	return m, m.opts.Dir
}

func device(id, health string) *pluginapi.Device {
	return &pluginapi.Device{ID: id, Health: health}
}

type counts struct{ capacity, allocatable int64 }

// resourceCounts reads one resource from Resources; -1 when it is not reported.
func resourceCounts(m *Manager, name string) counts {
	capacity, allocatable := m.Resources()
	out := counts{-1, -1}
	if q, ok := capacity[v1.ResourceName(name)]; ok {
		out.capacity = q.Value()
	}
	if q, ok := allocatable[v1.ResourceName(name)]; ok {
		out.allocatable = q.Value()
	}
	return out
}

func waitCounts(t *testing.T, m *Manager, name string, want counts) {
	t.Helper()
	testutil.Eventually(t, name+" counts", func() bool { return resourceCounts(m, name) == want })
}

// podWith returns a pod whose containers each request the given number of resourceName.
func podWith(uid, resourceName string, perContainer ...int64) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = uid, "default", types.UID(uid)
	for i, n := range perContainer {
		rl := v1.ResourceList{v1.ResourceName(resourceName): *resource.NewQuantity(n, resource.DecimalSI)}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{
			Name: "c" + string(rune('0'+i)), Resources: v1.ResourceRequirements{Limits: rl, Requests: rl},
		})
	}
	return p
}

var errInjected = errors.New("injected failure")

// admit allocates every container of pod in order, init containers first, with no NUMA
// affinity: what the topology manager does with policy none.
func admit(m *Manager, pod *v1.Pod) error {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if err := m.Allocate(pod, &list[i], topology.Hint{}); err != nil {
				return err
			}
		}
	}
	return nil
}
