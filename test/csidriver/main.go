// Command csidriver is a small hostpath-style CSI driver for nodelet's tests and bench: each
// volume is a directory under --data-dir, staged and published by bind mounts. It registers
// itself through the kubelet's plugins_registry socket as node-driver-registrar would, and,
// given a kubeconfig, also does what the external provisioner and attacher sidecars do for
// it: it creates a PersistentVolume (a directory) for each claim of a StorageClass naming it,
// deletes released ones, and marks its VolumeAttachments attached. Every node call is logged
// as one JSON line to --calls so tests can check what the kubelet asked (and, given a
// kubeconfig, whether the Node listed the volume in volumesInUse when it was staged or
// published).
//
// Test-only: no driver image is reachable from the test machines.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type options struct {
	name, kubeletDir, dataDir, nodeID, kubeconfig, calls string
	stage, mountGroup                                    bool
	maxVolumes                                           int64
}

func main() {
	var o options
	host, _ := os.Hostname()
	flag.StringVar(&o.name, "name", "hostpath.csi.nodelet.test", "the driver's name")
	flag.StringVar(&o.kubeletDir, "kubelet-dir", "/var/lib/kubelet", "the kubelet's --root-dir: the sockets go under plugins/ and plugins_registry/")
	flag.StringVar(&o.dataDir, "data-dir", "/var/lib/csi-nodelet-test", "where the volumes' directories are")
	flag.StringVar(&o.nodeID, "node-id", host, "the node ID NodeGetInfo reports (and the topology segment)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "when set, provision claims and attach VolumeAttachments through this API server")
	flag.StringVar(&o.calls, "calls", "", "append every node call as a JSON line to this file")
	flag.BoolVar(&o.stage, "stage", true, "advertise STAGE_UNSTAGE_VOLUME")
	flag.BoolVar(&o.mountGroup, "mount-group", false, "advertise VOLUME_MOUNT_GROUP: apply a pod's fsGroup to the volume at stage and publish")
	flag.Int64Var(&o.maxVolumes, "max-volumes", 0, "MaxVolumesPerNode reported by NodeGetInfo (0: no limit)")
	klog.InitFlags(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "csidriver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return err
	}
	calls, err := openCalls(o.calls)
	if err != nil {
		return err
	}
	calls.inUse = newInUseChecker(o)
	endpoint := filepath.Join(o.kubeletDir, "plugins", o.name, "csi.sock")
	regSocket := filepath.Join(o.kubeletDir, "plugins_registry", o.name+"-reg.sock")
	driverSrv, err := serve(endpoint, func(s *grpc.Server) {
		csipb.RegisterIdentityServer(s, identity{name: o.name})
		csipb.RegisterNodeServer(s, &node{o: o, calls: calls})
		csipb.RegisterControllerServer(s, &controller{dataDir: o.dataDir})
	})
	if err != nil {
		return err
	}
	defer driverSrv.Stop()
	regSrv, err := serve(regSocket, func(s *grpc.Server) {
		registerapi.RegisterRegistrationServer(s, registration{name: o.name, endpoint: endpoint})
	})
	if err != nil {
		return err
	}
	defer func() { regSrv.Stop(); _ = os.Remove(regSocket) }()
	klog.InfoS("Serving", "driver", o.name, "endpoint", endpoint, "registration", regSocket)
	if o.kubeconfig != "" {
		go runSidecars(ctx, o)
	}
	<-ctx.Done()
	return nil
}

// serve listens on a fresh unix socket at path and serves the services register adds.
func serve(path string, register func(*grpc.Server)) (*grpc.Server, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(l) }()
	return s, nil
}

// registration answers the kubelet's plugin watcher.
type registration struct{ name, endpoint string }

func (r registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		klog.InfoS("Registered with the kubelet", "driver", r.name)
	} else {
		klog.ErrorS(nil, "The kubelet refused the registration", "driver", r.name, "error", s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

type identity struct{ name string }

func (i identity) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: i.name, VendorVersion: "0.1.0"}, nil
}

func (identity) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	return &csipb.GetPluginCapabilitiesResponse{Capabilities: []*csipb.PluginCapability{{
		Type: &csipb.PluginCapability_Service_{Service: &csipb.PluginCapability_Service{Type: csipb.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (identity) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}
