// Package kuberuntime is the pod runtime: it turns a desired pod into CRI calls (sandbox, image
// pulls through internal/runtime/images, init and sidecar containers in order, app containers with
// crash-loop back-off, in-place resize, kills with preStop) and reads back what the runtime
// holds as container.PodStatus. Container options come from internal/runtime/containeropts, every CRI
// call goes through internal/runtime/cri.
package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/podspec/downward"
	"github.com/nodelet/nodelet/internal/podspec/objects"
	"github.com/nodelet/nodelet/internal/podspec/podhooks"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/containeropts"
	"github.com/nodelet/nodelet/internal/runtime/cri"
	"github.com/nodelet/nodelet/internal/runtime/images"
	"github.com/nodelet/nodelet/internal/runtime/runtimefeatures"
)

// ImageService is what SyncPod needs from the image manager (*images.Manager).
type ImageService interface {
	EnsureImage(ctx context.Context, pod *v1.Pod, container *v1.Container, pullSecrets []v1.Secret, sb images.Sandbox) (imageRef, waitReason, msg string, err error)
	EnsureVolumeImage(ctx context.Context, pod *v1.Pod, vol *v1.ImageVolumeSource, pullSecrets []v1.Secret, sb images.Sandbox) (imageRef, waitReason, msg string, err error)
	// ForgetPod drops what is kept per pod (pull back-off, last pull errors) once it is removed.
	ForgetPod(uid types.UID)
	// ImageUser returns the user an image runs as (runAsNonRoot checks): its uid when
	// numeric, else its user name.
	ImageUser(ctx context.Context, image string) (uid *int64, user string, err error)
}

// RuntimeClasses resolves a pod's RuntimeClass to its CRI handler (*runtimeclass.Manager,
// runtimeclass.Standalone). It is not a config hook: the handler is RunPodSandbox's own
// argument, and user namespaces, recursive read-only mounts and pulls ask for it too.
type RuntimeClasses interface {
	Handler(pod *v1.Pod) (string, error)
}

// Options configure the runtime manager.
type Options struct {
	// CRI is the runtime's client, the connection nodelet shares among its components
	// (required; its owner closes it).
	CRI *cri.Client
	// RootDir holds per-pod state under RootDir/pods/<uid> (required: the configuration's
	// root directory).
	RootDir string
	// PodLogsDir holds container logs, RootDir-independent (required: podLogsDir).
	PodLogsDir string
	// ServiceEnv returns the Service environment variables of pod's containers; nil (standalone)
	// gives none.
	ServiceEnv func(pod *v1.Pod) ([]v1.EnvVar, error)
	// ContainerLogsDir gets one symlink per container to its log file, for log collectors
	// (default /var/log/containers).
	ContainerLogsDir string
	// Recorder receives container events; nil drops them.
	Recorder record.EventRecorder
	// Images ensures images; nil builds an images.Manager on the same connection with
	// serialized pulls.
	Images ImageService
	// PullSecrets returns the pod's image pull secrets; nil means none.
	PullSecrets func(pod *v1.Pod) []v1.Secret
	// ResolvConf is the host resolver config used by dnsPolicy Default (resolvConf); empty
	// gives such pods none.
	ResolvConf string
	// ClusterDNS and ClusterDomain configure dnsPolicy ClusterFirst; without ClusterDNS such
	// pods fall back to the host resolver config.
	ClusterDNS    []string
	ClusterDomain string
	// Capacity is the machine's CPUs and memory, read once at start: what an unset limit
	// reads as (resourceFieldRef) and what memory requests weigh against (oom_score_adj).
	Capacity downward.Capacity
	// NodeName and NodeIP fill spec.nodeName and status.hostIP env references.
	NodeName string
	NodeIP   string
	// Objects reads the ConfigMaps and Secrets containers' env references; nil (standalone)
	// makes every such reference fail with an error naming the object.
	Objects objects.Getter
	// Volumes is the volume manager: where each of a pod's volumes is on the host, once set
	// up. nil refuses every volume mount.
	Volumes containeropts.Volumes
	// Hooks are what the resource managers add to the sandbox and container configs (the
	// pod cgroup parent, device plugin allocations, cpusets, the CPU quota of exclusive
	// CPUs), applied in their order after the runtime's own settings; the zero value adds
	// nothing.
	Hooks podhooks.Hooks
	// RuntimeClasses gives the CRI handler of each pod's sandbox (its RuntimeClass's); nil
	// gives the runtime's default to every pod. An error fails the sandbox's creation.
	RuntimeClasses RuntimeClasses
	// Timeline, when set, records the pod's steps (sandbox, images, containers, kills).
	Timeline *timeline.Recorder
	// SeccompDefault gives RuntimeDefault seccomp to containers and sandboxes whose pod
	// names no profile (seccompDefault); otherwise they run unconfined, as upstream.
	SeccompDefault bool
	// NoCPUQuota leaves CPU limits without a CFS quota (cpuCFSQuota: false).
	NoCPUQuota bool
	// Features records what each CRI Status reports the runtime can do, and is asked before
	// a pod field needing one of those features is sent; nil keeps a private store.
	Features *runtimefeatures.Store
	// IDRanges gives hostUsers: false pods their user namespace range; nil refuses them.
	IDRanges PodIDRanges
	// UserNamespacesOff is featureGates UserNamespacesSupport=false: as upstream, no user
	// namespace option goes to CRI and a pod that sets hostUsers at all is refused.
	UserNamespacesOff bool
	// Actuated records the resources set on each container; nil disables in-place resize.
	Actuated ActuatedResources
	// PodCgroups resizes pod cgroups in place; nil when nodelet makes none.
	PodCgroups PodCgroups
	// Memory shapes containers' memory beyond their limit: the OOM group and swap, as
	// upstream; the zero value sends neither.
	Memory MemorySettings
	// SELinux: the host runs SELinux; mounts then ask the runtime to relabel, as upstream.
	SELinux bool
	// PullRuntimeHandler names the sandbox's runtime handler in PullImage's image spec
	// (upstream's RuntimeClassInImageCriApi feature gate, off by default).
	PullRuntimeHandler bool
	// StopSignals is the ContainerStopSignals feature gate: a container's lifecycle.stopSignal
	// goes to CRI (admission refuses it where the runtime would drop it).
	StopSignals bool
	// ImageVolumes is the ImageVolume feature gate: image volumes' images are pulled and
	// mounted through CRI's Mount.image.
	ImageVolumes bool
	// Started is the prober's startup result for a running container instance (runtime ID):
	// a sidecar with a startupProbe lets the next init container start only once it passed.
	// nil counts every running container as started.
	Started func(pod *v1.Pod, container, containerID string) bool
}

// Manager is the pod runtime: it implements container.Runtime (and the other small
// interfaces of internal/runtime/container) over the CRI client.
type Manager struct {
	cri         *cri.Client
	images      ImageService
	recorder    record.EventRecorder
	pullSecrets func(pod *v1.Pod) []v1.Secret
	rootDir     string
	podLogsDir  string
	dns         *containeropts.DNS
	nodeName    string
	nodeIP      string
	objects     objects.Getter
	hooks       podhooks.Hooks
	actuated    ActuatedResources
	podCgroups  PodCgroups
	started     func(pod *v1.Pod, container, containerID string) bool
	// classes, seccompDefault and noCPUQuota: see Options.
	classes        RuntimeClasses
	timeline       *timeline.Recorder
	seccompDefault bool
	noCPUQuota     bool
	// logLinks keeps the per-container log symlinks; mounts builds containers' mounts (and
	// writes the pods' hosts files).
	logLinks   containeropts.LogLinks
	mounts     containeropts.Mounts
	serviceEnv func(pod *v1.Pod) ([]v1.EnvVar, error)

	// prepulled holds image outcomes PullImages got ahead of a start, each used once.
	prepulled *utilcache.LRUExpireCache

	features  *runtimefeatures.Store
	idRanges  PodIDRanges
	usernsOff bool

	memory         MemorySettings
	pullHandler    bool
	stopSignals    bool
	imageVolumesOn bool

	capacity downward.Capacity // for oom_score_adj and resourceFieldRef defaults
}

// step records one step of pod that began at start and ends now.
func (m *Manager) step(pod *v1.Pod, name, container, call, detail string, start time.Time, err error) {
	s := timeline.Step{Name: name, Container: container, Call: call, Detail: detail, Start: start}
	if err != nil {
		s.Error = err.Error()
	}
	m.timeline.Record(pod, s)
}

// begin records a step of pod that begins now and shows as in progress until the returned
// func ends it.
func (m *Manager) begin(pod *v1.Pod, name, container, call, detail string) func(detail string, err error) {
	return m.timeline.Begin(pod, timeline.Step{Name: name, Container: container, Call: call, Detail: detail})
}

func (m *Manager) seccomp() containeropts.Seccomp {
	return containeropts.Seccomp{RootDir: m.rootDir, RuntimeDefault: m.seccompDefault}
}

// NewManager returns a Manager over opts.CRI.
func NewManager(opts Options) (*Manager, error) {
	if opts.CRI == nil || opts.RootDir == "" || opts.PodLogsDir == "" {
		return nil, errors.New("runtime: a CRI client, RootDir and PodLogsDir are required")
	}
	return newManager(opts.CRI, opts), nil
}

func newManager(client *cri.Client, opts Options) *Manager {
	if opts.ContainerLogsDir == "" {
		opts.ContainerLogsDir = container.DefaultContainerLogsDir
	}
	if opts.Recorder == nil {
		opts.Recorder = &record.FakeRecorder{} // nil channel: events are dropped
	}
	if opts.Images == nil {
		// With a client given NewManager cannot fail.
		opts.Images, _ = images.NewManager(images.Options{
			CRI: client, Recorder: opts.Recorder, Serialize: true,
		})
	}
	if opts.Features == nil {
		opts.Features = &runtimefeatures.Store{}
	}
	if opts.PullSecrets == nil {
		opts.PullSecrets = func(*v1.Pod) []v1.Secret { return nil }
	}
	if opts.ImageVolumes {
		metrics.EnableImageVolumes()
	}
	dns := containeropts.NewDNS(opts.ResolvConf, opts.ClusterDNS, opts.ClusterDomain)
	return &Manager{
		cri:         client,
		images:      opts.Images,
		recorder:    opts.Recorder,
		pullSecrets: opts.PullSecrets,
		rootDir:     opts.RootDir,
		podLogsDir:  opts.PodLogsDir,
		dns:         dns,
		nodeName:    opts.NodeName,
		capacity:    opts.Capacity,
		nodeIP:      opts.NodeIP,
		objects:     opts.Objects,
		logLinks:    containeropts.LogLinks{Dir: opts.ContainerLogsDir, PodLogsDir: opts.PodLogsDir},
		serviceEnv:  opts.ServiceEnv,
		mounts: containeropts.Mounts{
			Volumes: opts.Volumes, PodsDir: filepath.Join(opts.RootDir, "pods"), SELinux: opts.SELinux,
			EtcHosts: containeropts.EtcHosts{
				PodsDir: filepath.Join(opts.RootDir, "pods"), NodeHostsFile: containeropts.EtcHostsPath, ClusterDomain: dns.ClusterDomain(),
			},
		},
		hooks: opts.Hooks, classes: opts.RuntimeClasses, timeline: opts.Timeline, seccompDefault: opts.SeccompDefault, noCPUQuota: opts.NoCPUQuota,
		started: opts.Started, prepulled: newPrepulled(),
		features: opts.Features, idRanges: opts.IDRanges, usernsOff: opts.UserNamespacesOff,
		actuated: opts.Actuated, podCgroups: opts.PodCgroups,
		memory: opts.Memory, pullHandler: opts.PullRuntimeHandler, stopSignals: opts.StopSignals, imageVolumesOn: opts.ImageVolumes,
	}
}

// Status returns an error unless the runtime reports RuntimeReady and NetworkReady.
func (m *Manager) Status(ctx context.Context) error {
	resp, err := m.cri.Status(ctx)
	if err != nil {
		return fmt.Errorf("runtime status: %w", err)
	}
	m.features.Observe(featuresReport(resp))
	ready := map[string]*runtimeapi.RuntimeCondition{}
	for _, c := range resp.GetStatus().GetConditions() {
		ready[c.Type] = c
	}
	var errs []error
	for _, typ := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		c := ready[typ]
		switch {
		case c == nil:
			errs = append(errs, fmt.Errorf("runtime reports no %s condition", typ))
		case !c.Status:
			errs = append(errs, fmt.Errorf("%s=false reason:%s message:%s", typ, c.Reason, c.Message))
		}
	}
	return errors.Join(errs...)
}

// Version returns the runtime's name and version, and keeps them with the runtime's features
// (the refusals of what it cannot do name them; whether image volumes can be mounted is decided
// by version).
func (m *Manager) Version(ctx context.Context) (string, string, error) {
	resp, err := m.cri.Version(ctx)
	if err != nil {
		return "", "", fmt.Errorf("runtime version: %w", err)
	}
	m.features.ObserveVersion(resp.RuntimeName, resp.RuntimeVersion)
	return resp.RuntimeName, resp.RuntimeVersion, nil
}

// podDir is where nodelet keeps a pod's files (volumes, termination messages, /etc/hosts).
func (m *Manager) podDir(uid string) string {
	return filepath.Join(m.rootDir, "pods", uid)
}

// podLogDir is the sandbox log directory: /var/log/pods/<ns>_<name>_<uid>.
func (m *Manager) podLogDir(pod *v1.Pod) string {
	return filepath.Join(m.podLogsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}
