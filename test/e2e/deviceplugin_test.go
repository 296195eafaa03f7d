//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/nodelet/nodelet/internal/testutil"
)

const e2eDevice = "e2e.nodelet.dev/widget"

// testDevicePlugin serves two widgets from the test process on the node's device-plugins
// directory, the way a vendor's plugin does: it registers, and registers again (on a new
// socket) once a restarted nodelet removed its old one.
type testDevicePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	dir string

	mu         sync.Mutex
	server     *grpc.Server
	registered int
}

func (p *testDevicePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *testDevicePlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	devices := []*pluginapi.Device{{ID: "widget-a", Health: pluginapi.Healthy}, {ID: "widget-b", Health: pluginapi.Healthy}}
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devices}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (p *testDevicePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"E2E_WIDGET": strings.Join(cr.DevicesIDs, ",")},
		})
	}
	return out, nil
}

// serve listens on a fresh socket and registers with nodelet.
func (p *testDevicePlugin) serve(t *testing.T) {
	t.Helper()
	sock := filepath.Join(p.dir, "e2e-widget.sock")
	p.stop() // first: closing the old listener unlinks the socket path
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	p.mu.Lock()
	p.server = srv
	p.mu.Unlock()
	conn, err := grpc.NewClient("unix://"+filepath.Join(p.dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: filepath.Base(sock), ResourceName: e2eDevice,
	}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("registering the test device plugin: %v", err)
	}
	p.mu.Lock()
	p.registered++
	p.mu.Unlock()
}

func (p *testDevicePlugin) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server != nil {
		p.server.Stop()
	}
}

// widgetPodYAML is a pod whose one container holds one widget and sleeps.
func widgetPodYAML(name string) string {
	return podYAML(name, "Always", "exec sleep 3600") + fmt.Sprintf("    resources:\n      limits:\n        %s: 1\n", e2eDevice)
}

// widgetOf reads the widget the plugin gave the container, from inside it.
func widgetOf(t *testing.T, c *cri.Container) string {
	t.Helper()
	ctx, cancel := criCtx()
	defer cancel()
	resp, err := rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: c.Id, Cmd: []string{"sh", "-c", "echo $E2E_WIDGET"}, Timeout: 5})
	if err != nil || resp.ExitCode != 0 {
		t.Fatalf("reading E2E_WIDGET: %v %+v", err, resp)
	}
	return strings.TrimSpace(string(resp.Stdout))
}

func TestDeviceAllocationSurvivesANodeletRestart(t *testing.T) {
	n := startNodelet(t)
	dir := filepath.Join(n.rootDir, "device-plugins")
	plugin := &testDevicePlugin{dir: dir}
	t.Cleanup(plugin.stop)
	plugin.serve(t)

	n.writeManifest("first.yaml", widgetPodYAML("first"))
	first := waitRunning(t, "first", "main", 60*time.Second)
	held := widgetOf(t, first)
	if held != "widget-a" && held != "widget-b" {
		t.Fatalf("first pod got widget %q", held)
	}
	checkpoint, err := os.ReadFile(filepath.Join(dir, "kubelet_internal_checkpoint"))
	if err != nil || !strings.Contains(string(checkpoint), held) {
		t.Fatalf("checkpoint does not record %s: %v\n%s", held, err, checkpoint)
	}

	// A hard stop: only the checkpoint carries the assignment over. The new nodelet removes the
	// plugin's socket, which is how a plugin learns it must register again.
	n.stop(syscall.SIGKILL)
	n.start()
	testutil.WaitFor(t, 30*time.Second, "the plugin's socket removed", func() (bool, string) {
		_, err := os.Stat(filepath.Join(dir, "e2e-widget.sock"))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	plugin.serve(t)

	n.writeManifest("second.yaml", widgetPodYAML("second"))
	second := waitRunning(t, "second", "main", 60*time.Second)
	if got := widgetOf(t, second); got == held || got == "" {
		t.Errorf("second pod got widget %q; the first pod holds %s", got, held)
	}
	n.writeManifest("third.yaml", widgetPodYAML("third"))
	testutil.WaitFor(t, 30*time.Second, "the third pod refused", func() (bool, string) {
		l := n.log()
		return strings.Contains(l, "Pod rejected") && strings.Contains(l, "third-"+nodeName) &&
			strings.Contains(l, "UnexpectedAdmissionError"), "not yet"
	})
	if cs := containers(t, "third", "main"); len(cs) != 0 {
		t.Errorf("third pod runs %d containers with both widgets taken", len(cs))
	}

	after := containers(t, "first", "main")
	if len(after) != 1 || after[0].Id != first.Id || after[0].State != cri.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("first pod's container changed across the restart: %v", after)
	}
	if got := widgetOf(t, after[0]); got != held {
		t.Errorf("first pod's widget is %q after the restart, want %s", got, held)
	}
}
