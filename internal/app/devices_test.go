package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// onePlugin serves one healthy device and answers Allocate with an env naming it.
type onePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
}

func (onePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (onePlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: []*pluginapi.Device{{ID: "d0", Health: pluginapi.Healthy}}}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (onePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs:    map[string]string{"TEST_DEVICE": cr.DevicesIDs[0]},
			Devices: []*pluginapi.DeviceSpec{{ContainerPath: "/dev/test0", HostPath: "/dev/null", Permissions: "rw"}},
		})
	}
	return out, nil
}

func TestPluginDevices(t *testing.T) {
	fake, manifests := startNode(t)
	dir := filepath.Join(filepath.Dir(manifests), "root", "device-plugins")
	sock := filepath.Join(dir, "kubelet.sock")
	testutil.Eventually(t, "the registration socket", func() bool { _, err := os.Stat(sock); return err == nil })

	lis, err := net.Listen("unix", filepath.Join(dir, "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, &onePlugin{})
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	defer srv.Stop()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := pluginapi.NewRegistrationClient(conn).Register(context.Background(), &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: "p.sock", ResourceName: "example.com/dev",
	}); err != nil {
		t.Fatal(err)
	}

	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},
"spec":{"terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"],
"resources":{"limits":{"example.com/dev":"1"},"requests":{"example.com/dev":"1"}}}]}}`
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(manifests, name+".json"), []byte(fmt.Sprintf(pod, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("gpu1")
	testutil.Eventually(t, "gpu1 running", func() bool { return running(fake, "gpu1") != nil })
	cfg := running(fake, "gpu1").Config
	found := false
	for _, kv := range cfg.Envs {
		found = found || (kv.Key == "TEST_DEVICE" && kv.Value == "d0")
	}
	if !found || len(cfg.Devices) != 1 || cfg.Devices[0].ContainerPath != "/dev/test0" {
		t.Errorf("container envs %v devices %v, want the plugin's", cfg.Envs, cfg.Devices)
	}
	// The only device is taken: the second pod is refused, not started.
	write("gpu2")
	time.Sleep(2 * time.Second)
	if cs := podContainers(fake, "gpu2"); len(cs) != 0 {
		t.Fatalf("pod without a free device got %d containers", len(cs))
	}
}
