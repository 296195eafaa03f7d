package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/nodelet/nodelet/internal/testutil"
)

// draRegistration is a DRA driver's registration socket: it says it is a DRAPlugin and reports
// what nodelet told it.
type draRegistration struct {
	registerapi.UnimplementedRegistrationServer
	endpoint string
	statuses chan *registerapi.RegistrationStatus
}

func (r *draRegistration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: "gpu.example.com", Endpoint: r.endpoint,
		SupportedVersions: []string{"v1beta1.DRAPlugin"}}, nil
}

func (r *draRegistration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.statuses <- s
	return &registerapi.RegistrationStatusResponse{}, nil
}

// registerDRADriver serves a DRA driver's registration socket in the node's plugins_registry
// and returns the status nodelet sent it.
func registerDRADriver(t *testing.T, root string) *registerapi.RegistrationStatus {
	t.Helper()
	dir := filepath.Join(root, "plugins_registry")
	testutil.Eventually(t, "the plugin registration directory", func() bool { _, err := os.Stat(dir); return err == nil })
	lis, err := net.Listen("unix", filepath.Join(dir, "gpu.example.com-reg.sock"))
	if err != nil {
		t.Fatal(err)
	}
	reg := &draRegistration{endpoint: filepath.Join(root, "plugins", "gpu.example.com", "dra.sock"), statuses: make(chan *registerapi.RegistrationStatus, 1)}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, reg)
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	select {
	case st := <-reg.statuses:
		return st
	case <-time.After(30 * time.Second):
		t.Fatal("the DRA driver was never told its registration status")
		return nil
	}
}

// With DynamicResourceAllocation on, a DRA driver registers through the plugin watcher; a pod
// with a claim is admitted but waits for its claim (standalone, nodelet cannot read it).
func TestDRADriverRegistersWithTheGateOn(t *testing.T) {
	cfg, fake, manifests := testConfig(t, "--feature-gates=DynamicResourceAllocation=true")
	startNodeWith(t, cfg)
	if st := registerDRADriver(t, cfg.RootDir); !st.PluginRegistered {
		t.Fatalf("DRA driver refused: %s", st.Error)
	}
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"claims"},
"spec":{"terminationGracePeriodSeconds":1,"resourceClaims":[{"name":"gpu","resourceClaimName":"gpu"}],
"containers":[{"name":"c","image":"busybox:1.36","command":["sleep","3600"],"resources":{"claims":[{"name":"gpu"}]}}]}}`
	if err := os.WriteFile(filepath.Join(manifests, "claims.json"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if n := len(fake.Sandboxes()); n != 0 {
		t.Fatalf("%d sandboxes made for a pod whose claim is not prepared", n)
	}
}

// With the gate off (upstream's default), nodelet tells a DRA driver it does not register it.
func TestDRADriverRefusedWithTheGateOff(t *testing.T) {
	cfg, _, _ := testConfig(t)
	startNodeWith(t, cfg)
	if st := registerDRADriver(t, cfg.RootDir); st.PluginRegistered || !strings.Contains(st.Error, `plugin type "DRAPlugin" is not supported`) {
		t.Fatalf("DRA driver with the gate off: registered %v, %q", st.PluginRegistered, st.Error)
	}
}
