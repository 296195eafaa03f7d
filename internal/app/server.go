package app

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/cli/podrun"
	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/node/certificates"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
	"github.com/nodelet/nodelet/internal/server"
	"github.com/nodelet/nodelet/internal/server/checkpoint"
	"github.com/nodelet/nodelet/internal/server/healthz"
	"github.com/nodelet/nodelet/internal/server/logs"
	"github.com/nodelet/nodelet/internal/server/stats"
	"github.com/nodelet/nodelet/internal/server/streaming"
	"github.com/nodelet/nodelet/internal/volumes/csi"
)

// startServer serves the kubelet API on port (10250) and, when set, the read-only port. In
// standalone mode webhook authentication/authorization has no API server to ask, so the API is
// served only when the configuration allows without one. It says whether the API is served.
func (n *agent) startServer(ctx context.Context, checks map[string]healthz.Check, extra server.Handlers) bool {
	kc := n.cfg.Kubelet
	if !n.cfg.EnableServer {
		return false
	}
	var client kubeclient.Interface
	if n.cluster != nil {
		client = n.cluster.clients.API
	}
	opts := server.Options{
		Address: kc.Address, Port: kc.Port, ReadOnlyPort: kc.ReadOnlyPort,
		TLSCertFile: kc.TLSCertFile, TLSKeyFile: kc.TLSPrivateKeyFile, TLSMinVersion: kc.TLSMinVersion,
		TLSCipherSuites: kc.TLSCipherSuites, CertDir: n.cfg.CertDir, NodeName: n.cfg.NodeName,
		ReloadCertificateFiles: n.cfg.ReloadServingCertFile,
		HostIPs:                parseIPs(node.HostIPs(n.cfg.NodeIP)), Hostnames: []string{n.cfg.NodeName},
		Authentication: kc.Authentication, Authorization: kc.Authorization,
		StreamingVerbFromMethod: n.cfg.StreamingVerbFromMethod,
		EnableDebuggingHandlers: n.cfg.EnableDebuggingHandlers,
		EnableSystemLogHandler:  n.cfg.EnableSystemLogHandler,
		EnableProfilingHandler:  n.cfg.EnableProfilingHandler,
		EnableDebugFlagsHandler: n.cfg.EnableDebugFlagsHandler,
		Client:                  client, Config: kc, HealthChecks: checks,
		Pods: n.podsWithStatus, RunningPods: n.runningPods,
	}
	if n.cluster != nil && kc.ServerTLSBootstrap {
		serving, err := n.servingCertificates(opts.HostIPs, opts.Hostnames)
		if err != nil {
			klog.ErrorS(err, "Kubelet API server not started (healthz on its own port still runs)")
			return false
		}
		opts.ServingCertificate = serving.Current
	}
	handlers := n.handlers()
	handlers.PodTimeline = n.timeline.Handler()
	handlers.StatsSummary, handlers.Metrics = extra.StatsSummary, extra.Metrics
	handlers.MetricsResource, handlers.MetricsProbes, handlers.MetricsCadvisor = extra.MetricsResource, extra.MetricsProbes, extra.MetricsCadvisor
	handlers.NodeUI = extra.NodeUI
	handlers.MetricsSLIs = metrics.SLIHandler()
	srv, err := server.New(opts, handlers)
	if err != nil {
		klog.ErrorS(err, "Kubelet API server not started (healthz on its own port still runs)")
		return false
	}
	n.comps.start("kubelet API server", func(ctx context.Context) error {
		if err := srv.Run(ctx); err != nil {
			return fmt.Errorf("serving %s: %w", net.JoinHostPort(kc.Address, strconv.Itoa(int(kc.Port))), err)
		}
		return nil
	})
	return true
}

// observability are the stats and metrics endpoints.
func (n *agent) observability() server.Handlers {
	summary := n.summaryProvider()
	return server.Handlers{
		StatsSummary: summary.Handler(), Metrics: metrics.Handler(),
		MetricsResource: metrics.NewResourceHandler(summary), MetricsProbes: metrics.ProbesHandler(),
		MetricsCadvisor: n.cadvisorHandler(),
	}
}

// volumeStatter keeps a missing CSI stats source a nil interface.
func volumeStatter(s *csi.Stats) stats.VolumeStatter {
	if s == nil {
		return nil
	}
	return s
}

// summaryProvider is the one stats provider (built on first use).
func (n *agent) summaryProvider() *stats.Provider {
	if n.summary == nil {
		n.summary = stats.NewSummaryProvider(stats.Deps{
			NodeName: n.cfg.NodeName, Pods: n.pods.Pods, PodStatus: n.syncer.Cache.Get,
			Runtime: n.cri, RootDir: n.cfg.RootDir,
			PodLogsDir:       n.cfg.Kubelet.PodLogsDir,
			SystemContainers: n.systemContainers, Volumes: volumeStatter(n.csiStats),
		})
		metrics.SetClaimVolumeStats(n.summary.ClaimVolumeStats)
	}
	return n.summary
}

// systemContainers are the container manager's system containers, as the summary takes them.
func (n *agent) systemContainers() []stats.SystemContainer {
	var out []stats.SystemContainer
	for _, c := range n.cm.SystemContainers() {
		out = append(out, stats.SystemContainer(c))
	}
	return out
}

// handlers are the endpoints served from the runtime: logs and streaming.
func (n *agent) handlers() server.Handlers {
	rt := n.runtime
	h := server.Handlers{
		ContainerLogs: logs.NewContainerLogsHandler(logs.Deps{Pods: n.pods, Status: rt.GetPodStatus, Runtime: rt}),
	}
	if n.cfg.EnableSystemLogHandler {
		h.NodeLogs = logs.NewNodeLogsHandler("/var/log")
	}
	sh := streaming.New(streaming.Deps{Pods: n.pods, PodStatus: rt.GetPodStatus, Runtime: n.cri})
	h.Exec, h.Attach, h.PortForward, h.Run = sh.Exec, sh.Attach, sh.PortForward, sh.Run
	if n.cfg.ContainerCheckpoint {
		h.Checkpoint = checkpoint.Handler(n.pods, checkpointRuntime{rt, n.cri}, filepath.Join(n.cfg.RootDir, "checkpoints"))
	}
	return h
}

// checkpointRuntime is the runtime's pods and its CRI checkpoint call.
type checkpointRuntime struct {
	*kuberuntime.Manager
	*cri.Client
}

// startLogRotation rotates the logs of containers by containerLogMaxSize /
// containerLogMaxFiles: every container of the runtime, or those under one pod's log
// directory (podLogDir) for a pod run in the foreground.
func (n *agent) startLogRotation(podLogDir string) error {
	kc := n.cfg.Kubelet
	maxSize, err := logs.ParseMaxSize(kc.ContainerLogMaxSize)
	if err != nil {
		return err
	}
	var containers container.LogService = n.runtime
	if podLogDir != "" {
		containers = podrun.LogsUnder{LogService: containers, Dir: podLogDir + string(filepath.Separator)}
	}
	rotator, err := logs.NewRotator(logs.RotatorOptions{
		MaxSize: maxSize, MaxFiles: int(n.cfg.ContainerLogMaxFiles), Interval: n.cfg.ContainerLogMonitorInterval,
		Runtime: containers,
	})
	if err != nil {
		return err
	}
	n.comps.start("log rotation", rotator.Run)
	return nil
}

// podsWithStatus is /pods: every desired pod with its latest computed status.
func (n *agent) podsWithStatus() []*v1.Pod {
	pods := n.pods.Pods()
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		c := p.DeepCopy()
		if st, ok := n.statuses.Get(p.UID); ok {
			c.Status = st
		}
		out = append(out, c)
	}
	return out
}

// runningPods is /runningpods: what the runtime runs, as bare pods with their containers.
func (n *agent) runningPods(ctx context.Context) ([]*v1.Pod, error) {
	running, err := n.runtime.GetPods(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Pod, 0, len(running))
	for _, rp := range running {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: rp.Name, Namespace: rp.Namespace, UID: rp.UID}}
		for _, c := range rp.Containers {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
		}
		out = append(out, p)
	}
	return out, nil
}

func parseIPs(list []string) []net.IP {
	var out []net.IP
	for _, s := range list {
		if ip := net.ParseIP(s); ip != nil {
			out = append(out, ip)
		}
	}
	return out
}

// servingCertificates requests the kubelet API's serving certificate through a CSR and keeps
// it renewed (serverTLSBootstrap); the server presents whatever is current.
func (n *agent) servingCertificates(ips []net.IP, hostnames []string) (*certificates.Manager, error) {
	store := certificates.Store{Dir: n.cfg.CertDir, Prefix: "kubelet-server"}
	csrs := n.cluster.clients.API.CertificatesV1().CertificateSigningRequests()
	serving, err := certificates.NewServingManager(store, n.cfg.NodeName, ips, hostnames, csrs)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	n.cluster.startAPI(n.comps, "serving certificate", serving.Run)
	metrics.WatchCertificate(metrics.CertServing, serving.Current)
	return serving, nil
}
