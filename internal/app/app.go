// Package app builds every nodelet component from the configuration and runs them. It is the
// only package that knows all the others.
package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/cli/runonce"
	"github.com/nodelet/nodelet/internal/cm"
	"github.com/nodelet/nodelet/internal/cm/cpumanager"
	"github.com/nodelet/nodelet/internal/cm/deviceplugin"
	"github.com/nodelet/nodelet/internal/cm/dra"
	"github.com/nodelet/nodelet/internal/cm/memorymanager"
	"github.com/nodelet/nodelet/internal/cm/topologymanager"
	"github.com/nodelet/nodelet/internal/config"
	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/host/topology"
	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/lib/version"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/node/daemon"
	"github.com/nodelet/nodelet/internal/node/eviction"
	"github.com/nodelet/nodelet/internal/node/gc"
	"github.com/nodelet/nodelet/internal/node/imagegc"
	"github.com/nodelet/nodelet/internal/node/shutdown"
	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/pod/admission"
	"github.com/nodelet/nodelet/internal/pod/podsync"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/prober"
	"github.com/nodelet/nodelet/internal/pod/resize"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/pod/syncloop"
	"github.com/nodelet/nodelet/internal/podspec/services"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/credprovider"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/images"
	"github.com/nodelet/nodelet/internal/runtime/kuberuntime"
	"github.com/nodelet/nodelet/internal/runtime/pleg"
	"github.com/nodelet/nodelet/internal/runtime/runtimeclass"
	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
	"github.com/nodelet/nodelet/internal/runtime/userns"
	"github.com/nodelet/nodelet/internal/server/cadvisor"
	"github.com/nodelet/nodelet/internal/server/healthz"
	"github.com/nodelet/nodelet/internal/server/nodeui"
	"github.com/nodelet/nodelet/internal/server/stats"
	"github.com/nodelet/nodelet/internal/volumes"
	"github.com/nodelet/nodelet/internal/volumes/csi"
	"github.com/nodelet/nodelet/internal/volumes/mount"
)

// Crash-loop back-off bounds, as upstream: 10s doubling to 5 minutes.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 300 * time.Second
	plegPeriod     = time.Second
)

// agent is what every mode shares: the runtime, sources and per-pod machinery. In cluster
// mode cluster holds the API-facing parts.
type agent struct {
	cfg      *config.Config
	recorder record.EventRecorder
	runtime  *kuberuntime.Manager
	cri      *cri.Client // the runtime's CRI connection, shared by runtime, images, stats and streaming
	volumes  *volumes.Manager
	csi      *csi.Drivers // the CSI drivers registered through plugins_registry
	csiStats *csi.Stats   // the CSI volumes' figures, asked of their drivers
	images   *images.Manager
	merger   *source.Merger
	sources  []string
	synced   *syncloop.Synced // the loop has handled every source's first snapshot; nil without sources
	pods     *pod.Manager
	statuses *status.Manager
	syncer   *podsync.Syncer
	prober   *prober.Manager
	probes   *prober.Results       // the probers' results, which the runtime reads too
	devices  *deviceplugin.Manager // nil when its socket could not be served
	dra      *dra.Manager          // the pods' ResourceClaims; nil without DynamicResourceAllocation or outside the daemon
	draPlugs *dra.Plugins          // the DRA drivers registered through plugins_registry; nil with dra
	cluster  *cluster              // nil standalone
	cm       *cm.ContainerManager  // node allocatable, process placement, QoS and pod cgroups
	resizer  *resize.Resizer       // in-place resize decisions over the allocation checkpoint
	comps    *components           // every long-running part, joined when nodelet stops

	host     *machine.Machine         // the machine's facts (capacity, IDs), read once at start
	machine  *topology.Machine        // the CPUs and NUMA nodes, read once at start
	topology *topologymanager.Manager // aligns the resource managers on NUMA nodes at admission
	cpus     *cpumanager.Manager      // exclusive CPUs and the shared pool; nil outside the daemon

	// Made first, as each is read by parts built before the one that writes it: the pod
	// workers' states, the PLEG's listing, the sync queue and the crash-loop back-off.
	workerStates *podworkers.States
	listing      *pleg.Listing
	queue        *syncloop.Queue
	backoff      *flowcontrol.Backoff

	objects     *apiObjects         // what pods reference, read through the API; nil standalone
	containerGC *gc.ContainerGC     // built by buildNode, nil without GC (internal/app/gc.go)
	imageGC     *imagegc.ImageGC    // built by buildNode, nil without GC (internal/app/gc.go)
	eviction    *eviction.Manager   // built by buildNode (internal/app/eviction.go)
	summary     *stats.Provider     // the stats every endpoint and the eviction manager read
	ooms        cadvisor.OOMCounter // OOM kills by cgroup, from the kernel log
	shutdown    *shutdown.Manager   // nil unless graceful node shutdown is configured
	timeline    *timeline.Recorder  // each pod's steps, for /debug/pods/{ns}/{name}/timeline
	events      *nodeui.Events      // the node's recent events, for the node page
	localNode   *v1.Node            // the Node a standalone node would register (node())

	features *runtimefeatures.Store // what the runtime reports it can do (CRI Status)
	idRanges *userns.Manager        // hostUsers: false pods' ID ranges
	// runtimeClasses gives the pod's CRI handler (its RuntimeClass's), as the runtime is given.
	runtimeClasses kuberuntime.RuntimeClasses

	// memory pins Guaranteed pods' memory to NUMA nodes; nil in a foreground run.
	memory *memorymanager.Manager
	// hostMemory shapes containers' memory beyond their limits: OOM group, swap.
	hostMemory kuberuntime.MemorySettings
}

// Run starts nodelet and blocks until ctx ends or a component fails to start.
func Run(ctx context.Context, cfg *config.Config) error {
	klog.InfoS("Starting nodelet", "version", version.String(), "node", cfg.NodeName, "standalone", cfg.Kubeconfig == "")
	// As upstream at -v=5, with the manifest URL's credentials masked.
	klog.V(5).InfoS("KubeletConfiguration", "configuration", klog.Format(config.Redacted(cfg.Kubelet)))
	stop := ctx.Done()
	if len(shutdown.Groups(cfg.Kubelet)) > 0 {
		// Graceful node shutdown: the stop request first terminates the pods, with every
		// component still running; only then do the components stop.
		ctx = context.WithoutCancel(ctx)
	}
	comps, ctx := newComponents(ctx)
	if err := holdLockFile(cfg, comps); err != nil {
		comps.release()
		return err
	}
	n, err := build(ctx, cfg, comps, asDaemon)
	if err != nil {
		comps.release()
		return err
	}
	main := func(ctx context.Context) error { return n.serve(ctx, stop) }
	if cfg.RunOnce {
		comps.start("volume manager", n.volumes.Run) // no pod terminates, so none tears down
		main = n.runOnce
	} else if err := n.buildNode(ctx); err != nil {
		comps.release()
		return err
	}
	if !cfg.RunOnce { // as upstream, which returns before telling systemd in run-once mode
		daemon.NotifyReady()
	}
	// Whatever ends main (a failure, ctx, or run-once finishing its pods) stops every component.
	return comps.Run(ctx, main)
}

// runOnce runs the sources' pods once, reports them and returns (--runonce).
func (n *agent) runOnce(ctx context.Context) error {
	return runonce.Run(ctx, runonce.Deps{
		Updates: n.merger.Updates(), SourcesSeen: func() bool { return n.merger.SeenAllSources(n.sources...) },
		SyncPod: n.syncer.SyncPod, Status: n.statuses.Get, Out: os.Stdout,
	})
}

// node is this node's object: the registered Node in cluster mode (nil until registered), the
// one a standalone node would register otherwise.
func (n *agent) node() *v1.Node {
	if n.cluster != nil {
		return n.cluster.view.Node()
	}
	return n.localNode
}

// holdLockFile takes --lock-file and, with --exit-on-lock-contention, stops nodelet (cleanly)
// when another process opens it.
func holdLockFile(cfg *config.Config, comps *components) error {
	if cfg.LockFile == "" {
		return nil
	}
	if err := daemon.AcquireLock(cfg.LockFile); err != nil {
		return err
	}
	if cfg.ExitOnLockContention {
		w, err := daemon.WatchContention(cfg.LockFile) // from now on, while nodelet builds too
		if err != nil {
			return err
		}
		comps.onStop(w.Close)
		comps.start("lock file contention", func(ctx context.Context) error {
			err := w.Run(ctx)
			if err == nil {
				comps.stop(nil)
			}
			return err
		})
	}
	return nil
}

// buildMode says what build makes: the daemon, or the agent of one foreground pod (runpod.go),
// which takes no node-wide role: no pod sources of its own and no device plugin socket.
type buildMode int

const (
	asDaemon buildMode = iota
	asForeground
)

func build(ctx context.Context, cfg *config.Config, comps *components, mode buildMode) (*agent, error) {
	kc := cfg.Kubelet
	for _, dir := range []string{cfg.RootDir, filepath.Join(cfg.RootDir, "pods"), kc.PodLogsDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("creating %s: %w (check --root-dir)", dir, err)
		}
	}
	if mode == asDaemon {
		sweepLeftovers(cfg.RootDir)
	}
	n := &agent{cfg: cfg, pods: pod.NewManager(), comps: comps, events: nodeui.NewEvents(nodeui.DefaultEvents),
		localNode: node.Local(cfg.NodeName, cfg.NodeLabels, cfg.RegisterWithTaints)}
	if !cfg.NoPodTimeline || mode == asForeground { // a foreground run prints its pod's steps
		n.timeline = timeline.New()
	}
	probes := newProbeSteps(n.timeline)
	n.pods.OnChange(func(old, updated *v1.Pod) {
		if updated == nil {
			n.timeline.Finish(old.UID)
			probes.forget(old.UID)
		}
	})
	var statusSink status.Syncer
	if cfg.Kubeconfig != "" {
		c, err := newCluster(ctx, cfg, n.pods, comps)
		if err != nil {
			return nil, err
		}
		n.cluster, statusSink = c, c.apiStatus
		n.objects = c.newAPIObjects(n.pods, comps)
	}
	if mode == asDaemon {
		n.newSources()
	}
	n.recorder = n.newRecorder(ctx)
	n.statuses = status.NewManager(statusSink)
	n.workerStates, n.listing = podworkers.NewStates(), pleg.NewListing()
	n.queue, n.backoff = syncloop.NewQueue(), flowcontrol.NewBackOff(backoffInitial, backoffMax)
	criClient, err := cri.Connect(kc.ContainerRuntimeEndpoint, cfg.ImageServiceEndpoint, kc.RuntimeRequestTimeout.Duration)
	if err != nil {
		return nil, err
	}
	n.cri = criClient
	comps.onStop(func() { _ = criClient.Close() })
	// Before anything asks the runtime: the device manager is told what runs at start.
	name, ver, err := waitForRuntime(ctx, criVersion(criClient), kc.ContainerRuntimeEndpoint)
	if err != nil {
		return nil, err
	}
	if cfg.CgroupDriverFromCRI {
		if err := cgroupDriverFromCRI(ctx, criClient, kc); err != nil {
			return nil, err
		}
	}
	imgs, err := n.newImages()
	if err != nil {
		return nil, err
	}
	if err := prepareHost(cfg); err != nil {
		return nil, err
	}
	n.host = readHost()
	if n.hostMemory, err = memorySettings(cfg, n.host); err != nil {
		return nil, err
	}
	if n.cm, err = cm.New(ctx, n.containerManagerConfig()); err != nil {
		return nil, err
	}
	if n.machine, err = readTopology(); err != nil {
		return nil, err
	}
	var providers []topologymanager.HintProvider
	if mode == asDaemon {
		// Hint providers in upstream's order: devices, CPUs, memory.
		if n.devices = n.startDevicePlugins(ctx); n.devices != nil {
			providers = append(providers, n.devices)
		}
		if err := n.newCPUManager(); err != nil {
			return nil, err
		}
		if n.memory, err = newMemoryManager(cfg, n.host, n.machine); err != nil {
			return nil, err
		}
		providers = append(providers, n.cpus, n.memory)
		if n.dra, n.draPlugs, err = n.newDRA(); err != nil {
			return nil, err
		}
	}
	if n.topology, err = newTopologyManager(cfg, n.machine, providers); err != nil {
		return nil, err
	}
	n.volumes = n.newVolumes()
	n.probes = prober.NewResults()
	n.features = &runtimefeatures.Store{}
	// Admission decides image volumes and stop signals by the runtime's version: known before
	// the first pod comes.
	n.features.ObserveVersion(name, ver)
	if n.idRanges, err = newUserNamespaces(cfg); err != nil {
		return nil, err
	}
	if err := n.newResizer(); err != nil {
		return nil, err
	}
	rt, err := kuberuntime.NewManager(n.runtimeOptions(ctx, imgs))
	if err != nil {
		return nil, err
	}
	n.runtime, n.images = rt, imgs
	if err := rt.Status(ctx); err != nil { // reads the runtime's features before any pod syncs
		klog.InfoS("Container runtime not ready yet", "err", err)
	}
	klog.InfoS("Container runtime ready", "runtime", name, "version", ver)
	n.prober = prober.New(prober.Deps{
		Exec: n.cri.ExecSync, Kill: rt.KillContainer,
		Status: n.statuses.Get, Recorder: n.recorder, Results: n.probes,
		OnResult: func(probeType, result string, pod *v1.Pod, container string) {
			metrics.RecordProbe(probeType, result, container, pod.Name, pod.Namespace, string(pod.UID))
			probes.result(probeType, result, pod, container)
		},
	})
	comps.start("prober", n.prober.Run)
	n.syncer = podsync.New(n.syncDeps(name))
	if mode == asDaemon {
		n.startSources(ctx)
	}
	return n, nil
}

// newImages is the image manager: pulls by the configured policy and limits, with the pod's,
// the node's and the credential plugins' credentials.
func (n *agent) newImages() (*images.Manager, error) {
	kc, cfg := n.cfg.Kubelet, n.cfg
	providers, err := credentialProviders(cfg)
	if err != nil {
		return nil, err
	}
	return images.NewManager(images.Options{
		Providers: providers,
		CRI:       n.cri, RootDir: cfg.RootDir, Recorder: n.recorder,
		Serialize: cfg.SerializeImagePulls, MaxParallel: int(cfg.MaxParallelImagePulls),
		PullQPS: float32(cfg.RegistryPullQPS), PullBurst: int(kc.RegistryBurst),
		VolumeImages: n.volumeImages,
	})
}

// runtimeOptions configures the CRI runtime manager; in cluster mode it reads objects,
// pull secrets, Services and RuntimeClasses through the components it starts here.
func (n *agent) runtimeOptions(ctx context.Context, imgs *images.Manager) kuberuntime.Options {
	kc, cfg := n.cfg.Kubelet, n.cfg
	opts := kuberuntime.Options{
		CRI:     n.cri,
		RootDir: cfg.RootDir, PodLogsDir: kc.PodLogsDir, Recorder: n.recorder, Images: imgs,
		ResolvConf: cfg.ResolverConfig, ClusterDNS: kc.ClusterDNS, ClusterDomain: kc.ClusterDomain, NodeName: cfg.NodeName, NodeIP: node.PrimaryHostIP(cfg.NodeIP),
		RuntimeClasses: runtimeclass.Standalone{}, Timeline: n.timeline, Volumes: n.volumes,
		SeccompDefault: cfg.SeccompDefault, NoCPUQuota: !cfg.CPUCFSQuota, Hooks: n.podHooks(),
		Features: n.features, IDRanges: n.idRanges, UserNamespacesOff: !cfg.UserNamespacesSupport, Capacity: n.capacity(),
		Memory: n.hostMemory, PullRuntimeHandler: cfg.PullRuntimeHandler, StopSignals: cfg.StopSignals,
		ImageVolumes: cfg.ImageVolumes,
		SELinux:      mount.SELinuxEnabled(mount.Mountinfo, "/proc/self/attr/current"),
	}
	if n.cluster != nil {
		api := n.cluster.clients.API
		opts.Objects = n.objects
		opts.PullSecrets = func(pod *v1.Pod) []v1.Secret { return podPullSecrets(ctx, n.objects.Manager, n.recorder, pod) }
		lister := services.NewLister(api)
		n.cluster.startAPI(n.comps, "services", lister.Run)
		opts.ServiceEnv = lister.EnvVars
		classes := runtimeclass.New(api)
		n.cluster.startAPI(n.comps, "runtime classes", classes.Run)
		opts.RuntimeClasses = classes
	}
	n.runtimeClasses = opts.RuntimeClasses
	n.resizeRuntimeOptions(&opts)
	// The prober is made after the runtime (it kills through it); the results it writes are
	// made before both.
	opts.Started = n.probes.Started
	return opts
}

// syncDeps are what the per-pod sync needs, cluster mode and devices adding theirs.
func (n *agent) syncDeps(runtimeName string) podsync.Deps {
	deps := podsync.Deps{
		Prober: n.prober, Volumes: n.volumes, Timeline: n.timeline,
		Runtime: n.runtime, Statuses: n.statuses, Backoff: n.backoff,
		RootDir: n.cfg.RootDir, RuntimeName: runtimeName, HostIPs: node.HostIPs(n.cfg.NodeIP), Recorder: n.recorder,
		Resizes: n.resizer,
	}
	if n.cluster != nil {
		deps.Mirrors = &podsync.Mirrors{Pods: n.pods, API: mirrorAPI{n.cluster.mirrors, n.cluster.ready}}
		deps.Terminated = n.cluster.apiStatus.PodTerminated
	}
	deps.RecursiveReadOnly = n.supportsRecursiveReadOnly
	deps.Release = n.release()
	deps.StopSignals = n.cfg.StopSignals
	if n.dra != nil {
		deps.Claims = n.dra
	}
	return deps
}

// buildNode builds what the daemon adds to build's agent: the PLEG, pod workers, sync loop,
// admission, garbage collection, eviction, node shutdown, the node in the API and the
// listeners.
func (n *agent) buildNode(ctx context.Context) error {
	kc := n.cfg.Kubelet
	relister := pleg.New(n.runtime, n.listing, plegPeriod, metrics.ObservePLEGRelist)
	metrics.SetNodeName(n.cfg.NodeName)
	metrics.SetRuntimeCounter(func() metrics.RuntimeCounts {
		pods, _ := relister.RunningPods()
		return stats.CountRuntime(pods, n.cfg.NodeName)
	})
	workers := podworkers.New(n.workerStates, n.syncer, n.queue, kc.SyncFrequency.Duration, n.recorder)
	n.comps.start("pod workers", workers.Run)
	synced := n.synced.Ready
	n.comps.start("volume manager", n.volumes.Run)
	n.startGC(workers, synced)
	if err := n.startEviction(workers); err != nil {
		return err
	}
	n.buildShutdown(ctx, workers)
	admit := &admission.Admitter{MaxPods: int(maxPods(kc)), Statuses: n.statuses, AllowedUnsafeSysctls: kc.AllowedUnsafeSysctls,
		Recorder: n.recorder, Node: n.node, RuntimeFeatures: n.features, StopSignals: n.cfg.StopSignals,
		ImageVolumes: n.cfg.ImageVolumes, DynamicResources: n.dra != nil,
		Devices: admissionDevices(n.devices), Topology: n.topology, Pressure: n.eviction.Admit, Shutdown: n.shutdownAdmit(),
		Allocatable: n.cluster.allocatable(), Allocated: n.resizer.Allocated,
	}
	loopCfg := syncloop.Config{
		NodeName: n.cfg.NodeName,
		Updates:  n.merger.Updates(), Events: relister.Events(), RunningPods: relister.RunningPods,
		SourcesReady: synced, Synced: n.synced, ActivePods: n.activePods,
		Pods: n.pods, Workers: workers, Queue: n.queue, Admit: admit,
		ProbeUpdates: n.prober.Updates(), Timeline: n.timeline,
	}
	if n.containerGC != nil {
		loopCfg.ContainerDied = n.containerGC.ContainerDied
	}
	if n.cluster != nil {
		n.cluster.loopHooks(ctx, &loopCfg)
	}
	loop := syncloop.New(loopCfg)
	if n.cluster != nil {
		n.cluster.start(ctx, n, func() error { return n.health(ctx, loop, relister) })
	}
	n.startCSIRegistrar() // after the node controller: it is told of the registrar's Node patches
	if err := n.startPodResources(synced); err != nil {
		return err
	}
	if n.shutdown != nil {
		n.startLogindWatch() // before healthz answers: see there
	}
	checks := map[string]healthz.Check{"syncloop": loop.Healthy, "pleg": relister.Healthy}
	if port := n.cfg.HealthzPort; port > 0 {
		addr := net.JoinHostPort(kc.HealthzBindAddress, strconv.Itoa(int(port)))
		ln, err := healthz.Listen(addr)
		if err != nil {
			return err
		}
		n.comps.start("healthz", func(ctx context.Context) error { return healthz.Serve(ctx, ln, checks) })
	}
	if err := n.startWatchdog(checks); err != nil {
		return err
	}
	if err := n.startLogRotation(""); err != nil {
		return err
	}
	page := n.newNodePage(checks)
	api := n.observability()
	n.comps.start("volume stats", n.summaryProvider().RunVolumeMeter) // summaries read its figures
	api.NodeUI = page.handler
	n.startNodePage(page, n.startServer(ctx, checks, api))
	n.comps.start("pleg", relister.Run)
	if n.cpus != nil {
		n.comps.start("cpu manager", n.cpus.Run)
	}
	n.comps.start("per-pod state sweep", n.sweep().Run)
	n.comps.start("exit events", func(ctx context.Context) error { return relister.WatchExits(ctx, n.cri) })
	n.startOOM()
	n.comps.start("sync loop", loop.Run)
	return nil
}

// serve returns when ctx ends or stop is closed (nodelet is asked to stop: SIGTERM), after the
// graceful node shutdown when that is configured.
func (n *agent) serve(ctx context.Context, stop <-chan struct{}) error {
	select {
	case <-ctx.Done():
	case <-stop:
		// With logind, its signal is the node shutdown and a stop request only stops nodelet.
		if n.shutdown != nil && !n.shutdown.Watching() {
			n.shutDown(ctx)
			return nil
		}
	}
	klog.InfoS("nodelet stopping; pods keep running and will be adopted at the next start")
	return nil
}

// waitForRuntime retries the CRI Version call every 2s for up to 2 minutes, so nodelet may
// start before its runtime.
func waitForRuntime(ctx context.Context, version func(context.Context) (string, string, error), endpoint string) (name, ver string, err error) {
	var lastErr error
	answered := func(ctx context.Context) (bool, error) {
		name, ver, lastErr = version(ctx)
		if lastErr != nil {
			klog.InfoS("Waiting for the container runtime", "endpoint", endpoint, "err", lastErr)
		}
		return lastErr == nil, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, answered); err != nil {
		if lastErr == nil {
			lastErr = err
		}
		return "", "", fmt.Errorf("container runtime at %s is not answering: %w (start it, e.g. `hack/containerd.sh start`, or fix --container-runtime-endpoint)", endpoint, lastErr)
	}
	return name, ver, nil
}

// criVersion is the runtime's name and version, as the CRI tells them.
func criVersion(c *cri.Client) func(context.Context) (string, string, error) {
	return func(ctx context.Context) (string, string, error) {
		resp, err := c.Version(ctx)
		if err != nil {
			return "", "", fmt.Errorf("runtime version: %w", err)
		}
		return resp.RuntimeName, resp.RuntimeVersion, nil
	}
}

// newRecorder returns an event recorder that logs events and, in cluster mode, posts them;
// messages are cut at kubeclient.MaxEventMessage.
func (n *agent) newRecorder(ctx context.Context) record.EventRecorder {
	b := record.NewBroadcaster()
	n.comps.onStop(b.Shutdown)
	b.StartStructuredLogging(2)
	if n.events != nil {
		b.StartEventWatcher(n.events.Add)
	}
	if n.cluster != nil {
		b.StartRecordingToSink(kubeclient.NewEventSink(ctx, n.cluster.clients.Events, n.cluster.ready))
	}
	return kubeclient.CapMessages(b.NewRecorder(kubeclient.Scheme, v1.EventSource{Component: "kubelet", Host: n.cfg.NodeName}))
}

// health is what the node's Ready condition reports: a shutdown under way, the runtime, the
// PLEG and the sync loop.
func (n *agent) health(ctx context.Context, loop *syncloop.Loop, relister *pleg.PLEG) error {
	if n.shutdown != nil {
		if err := n.shutdown.Status(); err != nil {
			return err
		}
	}
	if err := n.runtime.Status(ctx); err != nil {
		return fmt.Errorf("container runtime is down: %w", err)
	}
	if err := relister.Healthy(); err != nil {
		return fmt.Errorf("PLEG is not healthy: %w", err)
	}
	return loop.Healthy()
}

// maxPods is maxPods, lowered to podsPerCore × CPUs when that is set and smaller.
func maxPods(kc *kubeletconfigv1beta1.KubeletConfiguration) int32 {
	if kc.PodsPerCore > 0 {
		return min(kc.MaxPods, kc.PodsPerCore*int32(goruntime.NumCPU()))
	}
	return kc.MaxPods
}

// credentialProviders loads the credential provider plugins, when configured.
func credentialProviders(cfg *config.Config) (func(context.Context, string) map[string]credprovider.Credential, error) {
	if cfg.CredentialProviderConfig == "" {
		return nil, nil
	}
	p, err := credprovider.Load(cfg.CredentialProviderConfig, cfg.CredentialProviderBinDir, images.MatchImage)
	if err != nil {
		return nil, err
	}
	return p.Credentials, nil
}
