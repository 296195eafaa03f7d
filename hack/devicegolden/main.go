// Command devicegolden has the upstream kubelet write a device manager checkpoint for the
// tests to read: it runs the kubelet standalone on an in-memory CRI runtime (no real pod, no
// pod cgroups, so nothing else on the machine is touched), serves it a device plugin, gives it
// a static pod whose init and app containers use the plugin's devices, and copies the
// kubelet_internal_checkpoint the kubelet writes to -out. The upstream kubelet serves device
// plugins in /var/lib/kubelet/device-plugins whatever its root directory; the files it leaves
// there are removed (a checkpoint that was there before is put back). Run it under the e2e lock,
// as it shares that directory with any other upstream kubelet.
//
//	go run ./hack/devicegolden -kubelet _output/cp/bin/kubelet -out internal/cm/deviceplugin/testdata/kubelet_internal_checkpoint
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/nodelet/nodelet/internal/runtime/cri/fakecri"
)

const resourceName = "golden.example.com/widget"

func main() {
	kubelet := flag.String("kubelet", "_output/cp/bin/kubelet", "the upstream kubelet binary")
	out := flag.String("out", "internal/cm/deviceplugin/testdata/kubelet_internal_checkpoint", "where to copy the checkpoint")
	flag.Parse()
	if err := run(*kubelet, *out); err != nil {
		fmt.Fprintln(os.Stderr, "devicegolden:", err)
		os.Exit(1)
	}
}

func run(kubelet, out string) error {
	dir, err := os.MkdirTemp("", "dg")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	restore := saveKernelTunables()
	defer restore()

	cri, err := serveCRI(filepath.Join(dir, "cri.sock"))
	if err != nil {
		return err
	}
	defer cri.Stop()
	root := filepath.Join(dir, "root")
	if err := writeFiles(dir); err != nil {
		return err
	}
	cmd := exec.Command(kubelet, "--config="+filepath.Join(dir, "config.yaml"), "--root-dir="+root,
		"--hostname-override=golden-node", "--v=2")
	logf, err := os.Create(filepath.Join(dir, "kubelet.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()

	pluginDir := pluginapi.DevicePluginPath
	defer keepPluginDir(pluginDir)()
	if err := waitFor(60*time.Second, func() bool { _, err := os.Stat(filepath.Join(pluginDir, "kubelet.sock")); return err == nil }); err != nil {
		logs, _ := os.ReadFile(logf.Name())
		return fmt.Errorf("kubelet never opened its device plugin socket: %w\n%s", err, tail(string(logs), 4000))
	}
	plugin, err := servePlugin(pluginDir)
	if err != nil {
		return err
	}
	defer plugin.Stop()
	if err := os.WriteFile(filepath.Join(dir, "manifests", "golden.yaml"), []byte(podManifest), 0o644); err != nil {
		return err
	}
	checkpoint := filepath.Join(pluginDir, "kubelet_internal_checkpoint")
	var data []byte
	err = waitFor(90*time.Second, func() bool {
		data, _ = os.ReadFile(checkpoint)
		var cp struct {
			Data struct{ PodDeviceEntries []json.RawMessage }
		}
		return json.Unmarshal(data, &cp) == nil && len(cp.Data.PodDeviceEntries) >= 2
	})
	if err != nil {
		logs, _ := os.ReadFile(logf.Name())
		return fmt.Errorf("no checkpoint with the pod's two containers: %w\ncheckpoint: %s\n%s", err, data, tail(string(logs), 4000))
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	fmt.Printf("devicegolden: %s\n", data)
	return os.WriteFile(out, data, 0o644)
}

// writeFiles writes the kubelet's configuration (standalone, no pod cgroups, fake runtime,
// ports of its own) and the static pod directory.
func writeFiles(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		return err
	}
	port, healthz := freePort(), freePort()
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s
staticPodPath: %s
fileCheckFrequency: 1s
podLogsDir: %s
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: ["none"]
failSwapOn: false
port: %d
readOnlyPort: 0
healthzPort: %d
healthzBindAddress: 127.0.0.1
resolvConf: /etc/resolv.conf
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
`, filepath.Join(dir, "cri.sock"), filepath.Join(dir, "manifests"), filepath.Join(dir, "pod-logs"), port, healthz)
	return os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o644)
}

// podManifest: an init container with one widget, handed on to the app container's two.
const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: golden
  uid: golden-uid
spec:
  initContainers:
  - name: init
    image: golden.local/app:1
    resources: {limits: {` + resourceName + `: 1}}
  containers:
  - name: app
    image: golden.local/app:1
    resources: {limits: {` + resourceName + `: 2}}
`

func serveCRI(sock string) (*grpc.Server, error) {
	f := fakecri.New()
	f.AddImage("golden.local/app:1", "registry.k8s.io/pause:3.10")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	return srv, nil
}

// widgets serves three devices: two on NUMA node 0, one without topology.
type widgets struct {
	pluginapi.UnimplementedDevicePluginServer
}

func (widgets) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (widgets) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	node0 := &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: 0}}}
	devices := []*pluginapi.Device{
		{ID: "w0", Health: pluginapi.Healthy, Topology: node0},
		{ID: "w1", Health: pluginapi.Healthy, Topology: node0},
		{ID: "w2", Health: pluginapi.Healthy},
	}
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devices}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func (widgets) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		ids := strings.Join(cr.DevicesIDs, ",")
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs:        map[string]string{"WIDGETS": ids},
			Annotations: map[string]string{"golden.example.com/widgets": ids},
			Mounts:      []*pluginapi.Mount{{ContainerPath: "/run/widgets", HostPath: "/var/run/widgets", ReadOnly: true}},
			Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/widget", HostPath: "/dev/null", Permissions: "rw"}},
		})
	}
	return out, nil
}

func servePlugin(dir string) (*grpc.Server, error) {
	lis, err := net.Listen("unix", filepath.Join(dir, "golden.sock"))
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, &widgets{})
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: "golden.sock", ResourceName: resourceName,
	}, grpc.WaitForReady(true))
	return srv, err
}

// keepPluginDir returns a function that removes what a run leaves in dir and puts back the
// checkpoint that was there before.
func keepPluginDir(dir string) func() {
	checkpoint := filepath.Join(dir, "kubelet_internal_checkpoint")
	before, err := os.ReadFile(checkpoint)
	had := err == nil
	return func() {
		for _, name := range []string{"kubelet.sock", "golden.sock", "kubelet_internal_checkpoint"} {
			_ = os.Remove(filepath.Join(dir, name))
		}
		if had {
			_ = os.WriteFile(checkpoint, before, 0o644)
		}
	}
}

func waitFor(timeout time.Duration, cond func() bool) error {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return nil
		}
	}
	return fmt.Errorf("timed out after %v", timeout)
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// saveKernelTunables reads the sysctls the kubelet rewrites at start and returns a function
// that writes them back.
func saveKernelTunables() func() {
	names := []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}
	saved := map[string][]byte{}
	for _, name := range names {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", name)); err == nil {
			saved[name] = v
		}
	}
	return func() {
		for name, v := range saved {
			_ = os.WriteFile(filepath.Join("/proc/sys", name), v, 0o644)
		}
	}
}
