// Package app builds every nodelet component from the configuration and runs them. It is the
// only package that knows all the others.
package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/admission"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/healthz"
	"github.com/nodelet/nodelet/internal/images"
	"github.com/nodelet/nodelet/internal/pleg"
	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/podsync"
	"github.com/nodelet/nodelet/internal/podworkers"
	"github.com/nodelet/nodelet/internal/runtime"
	"github.com/nodelet/nodelet/internal/source"
	"github.com/nodelet/nodelet/internal/status"
	"github.com/nodelet/nodelet/internal/syncloop"
	"github.com/nodelet/nodelet/internal/version"
)

// Crash-loop back-off bounds, as upstream: 10s doubling to 5 minutes.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 300 * time.Second
	plegPeriod     = time.Second
)

// node is what every mode shares: the runtime, sources and per-pod machinery.
type node struct {
	cfg      *config.Config
	recorder record.EventRecorder
	runtime  runtime.Manager
	merger   *source.Merger
	sources  []string
	statuses *status.Manager
	syncer   *podsync.Syncer
}

// Run starts nodelet and blocks until ctx ends or a component fails to start.
func Run(ctx context.Context, cfg *config.Config) error {
	klog.InfoS("Starting nodelet", "version", version.String(), "node", cfg.NodeName, "standalone", cfg.Kubeconfig == "")
	n, err := build(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.RunOnce {
		return n.runOnce(ctx)
	}
	return n.run(ctx)
}

func build(ctx context.Context, cfg *config.Config) (*node, error) {
	kc := cfg.Kubelet
	n := &node{cfg: cfg, recorder: newRecorder(cfg.NodeName), statuses: status.NewManager(nil)}
	imgs, err := images.NewManager(images.Options{
		Endpoint: kc.ContainerRuntimeEndpoint, Recorder: n.recorder, Serialize: boolOr(kc.SerializeImagePulls, true),
		RequestTimeout: kc.RuntimeRequestTimeout.Duration,
	})
	if err != nil {
		return nil, err
	}
	rt, err := runtime.NewManager(runtime.Options{
		Endpoint: kc.ContainerRuntimeEndpoint, RequestTimeout: kc.RuntimeRequestTimeout.Duration,
		RootDir: cfg.RootDir, PodLogsDir: strOr(&kc.PodLogsDir, "/var/log/pods"), Recorder: n.recorder, Images: imgs,
		ResolvConf: strOr(kc.ResolverConfig, "/etc/resolv.conf"), ClusterDNS: kc.ClusterDNS, ClusterDomain: kc.ClusterDomain, NodeName: cfg.NodeName, NodeIP: firstOr(hostIPs(cfg.NodeIP)),
	})
	if err != nil {
		return nil, err
	}
	n.runtime = rt
	name, ver, err := waitForRuntime(ctx, rt, kc.ContainerRuntimeEndpoint)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Container runtime ready", "runtime", name, "version", ver)
	n.syncer = podsync.New(podsync.Deps{
		Runtime: rt, Statuses: n.statuses, Backoff: flowcontrol.NewBackOff(backoffInitial, backoffMax),
		RootDir: cfg.RootDir, RuntimeName: name, HostIPs: hostIPs(cfg.NodeIP),
	})
	n.startSources(ctx)
	return n, nil
}

// startSources starts the static pod directory and URL sources feeding one merger.
func (n *node) startSources(ctx context.Context) {
	kc := n.cfg.Kubelet
	n.merger = source.NewMerger()
	if kc.StaticPodPath != "" {
		out := n.merger.Channel(source.FileSource)
		n.sources = append(n.sources, source.FileSource)
		fs := source.NewFileSource(kc.StaticPodPath, n.cfg.NodeName, kc.FileCheckFrequency.Duration, out, n.recorder)
		go fs.Run(ctx)
	}
	if kc.StaticPodURL != "" {
		out := n.merger.Channel(source.HTTPSource)
		n.sources = append(n.sources, source.HTTPSource)
		header := http.Header{}
		for k, vs := range kc.StaticPodURLHeader {
			for _, v := range vs {
				header.Add(k, v)
			}
		}
		us := source.NewURLSource(kc.StaticPodURL, header, n.cfg.NodeName, kc.HTTPCheckFrequency.Duration, out, n.recorder)
		go us.Run(ctx)
	}
	if len(n.sources) == 0 {
		klog.InfoS("No pod sources configured: set --pod-manifest-path (staticPodPath) or --manifest-url to run pods")
	}
	go n.merger.Run(ctx)
}

func (n *node) run(ctx context.Context) error {
	kc := n.cfg.Kubelet
	relister := pleg.New(n.runtime, plegPeriod)
	queue := syncloop.NewQueue()
	workers := podworkers.New(ctx, n.syncer, queue, kc.SyncFrequency.Duration)
	loop := syncloop.New(syncloop.Config{
		Updates: n.merger.Updates(), Events: relister.Events(), RunningPods: relister.RunningPods,
		SourcesReady: func() bool { return n.merger.SeenAllSources(n.sources...) },
		Pods:         pod.NewManager(), Workers: workers, Queue: queue,
		Admit: &admission.Admitter{MaxPods: int(kc.MaxPods), Statuses: n.statuses},
	})
	if port := int32Or(kc.HealthzPort, 10248); port > 0 {
		addr := net.JoinHostPort(kc.HealthzBindAddress, strconv.Itoa(int(port)))
		err := healthz.Serve(ctx, addr, map[string]healthz.Check{"syncloop": loop.Healthy, "pleg": relister.Healthy})
		if err != nil {
			return err
		}
	}
	go relister.Run(ctx)
	loop.Run(ctx)
	klog.InfoS("nodelet stopping; pods keep running and will be adopted at the next start")
	return nil
}

// waitForRuntime retries the CRI Version call so nodelet may start before its runtime.
func waitForRuntime(ctx context.Context, rt runtime.Manager, endpoint string) (string, string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		name, ver, err := rt.Version(ctx)
		if err == nil {
			return name, ver, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", "", fmt.Errorf("container runtime at %s is not answering: %w (start it, e.g. `hack/containerd.sh start`, or fix --container-runtime-endpoint)", endpoint, err)
		}
		klog.InfoS("Waiting for the container runtime", "endpoint", endpoint, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// newRecorder returns an event recorder that logs events. Cluster mode adds an API sink.
func newRecorder(nodeName string) record.EventRecorder {
	b := record.NewBroadcaster()
	b.StartStructuredLogging(2)
	return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: nodeName})
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func strOr(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

func int32Or(v *int32, def int32) int32 {
	if v == nil {
		return def
	}
	return *v
}

func firstOr(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}
