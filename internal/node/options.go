// Package node keeps this machine's Node object in the API server: it registers the Node, posts
// its status (capacity, allocatable, addresses, conditions, images) and renews its Lease in
// kube-node-lease so the control plane knows the node is alive.
package node

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/host/machine"
	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// Defaults, as the kubelet's.
const (
	DefaultUpdateFrequency      = 10 * time.Second
	DefaultReportFrequency      = 5 * time.Minute
	DefaultLeaseDurationSeconds = 40
	DefaultPort                 = 10250
	DefaultMaxImages            = 50
	// LeaseNamespace holds one Lease per node, named after it.
	LeaseNamespace = "kube-node-lease"
	// maxNamesPerImage bounds the names of one image in the status (upstream's limit).
	maxNamesPerImage = 5
)

// Options are what the configuration says about the Node.
type Options struct {
	NodeName string
	// Hostname is reported as the Hostname address; NodeName when empty.
	Hostname string
	// NodeIPs (--node-ip) become InternalIP addresses; the host's primary address when empty.
	NodeIPs []string
	// Labels (--node-labels) are set when the Node is created.
	Labels map[string]string
	// Taints (--register-with-taints) are set when the Node is created.
	Taints []v1.Taint
	// Register creates the Node when true (registerNode); otherwise it must already exist.
	Register bool
	// Port is the kubelet API port reported in daemonEndpoints.
	Port int32
	// UpdateFrequency is how often status is recomputed (nodeStatusUpdateFrequency);
	// ReportFrequency is how long an unchanged status may go unposted (nodeStatusReportFrequency).
	UpdateFrequency time.Duration
	ReportFrequency time.Duration
	// LeaseDurationSeconds is the Lease's duration (nodeLeaseDurationSeconds); it is renewed every
	// quarter of it.
	LeaseDurationSeconds int32
	MaxPods              int32
	// KubeReserved and SystemReserved (resource name → quantity) and EvictionHard (signal →
	// quantity or percentage) are held back from allocatable.
	KubeReserved   map[string]string
	SystemReserved map[string]string
	EvictionHard   map[string]string
	// RootDir is the kubelet root directory (required, the configuration's); its filesystem is
	// the node's ephemeral storage.
	RootDir string
	// MaxImages caps the images in the status (nodeStatusMaxImages): -1 no cap, 0 none.
	MaxImages int32
	// ProviderID (providerID) is set on the Node when it is created.
	ProviderID string
	// ControllerAttachDetach (enableControllerAttachDetach) leaves volume attach/detach to the
	// controller manager, which the Node's annotation tells it.
	ControllerAttachDetach bool
	// ExternalCloudProvider (--cloud-provider=external) registers the Node with the
	// uninitialized taint and leaves its addresses to the cloud controller manager (cloud.go).
	ExternalCloudProvider bool
	// Unschedulable (--register-schedulable=false) registers the Node with spec.unschedulable.
	Unschedulable bool
}

// RuntimeVersioner reports the container runtime's name and version ("containerd", "1.6.20").
type RuntimeVersioner interface {
	Version(ctx context.Context) (name, version string, err error)
}

// ImageLister lists the images on the node, largest first.
type ImageLister interface {
	List(ctx context.Context) ([]v1.ContainerImage, error)
}

// Deps are the Node controllers' collaborators. Only Client and Heartbeat are required.
type Deps struct {
	// Client creates and labels the Node; Heartbeat posts status and renews the Lease.
	Client    kubeclient.Interface
	Heartbeat kubeclient.Interface
	Recorder  record.EventRecorder
	Runtime   RuntimeVersioner
	Images    ImageLister
	// Health reports why the node is not ready (runtime status, PLEG, sync loop); nil means ready.
	Health func() error
	// Pressure reports memory, disk and PID pressure (the eviction manager); nil means none.
	Pressure func() (memory, disk, pid bool)
	// Devices returns the device plugin resources: capacity counts every device, allocatable
	// the healthy ones. nil means none.
	Devices func() (capacity, allocatable v1.ResourceList)
	// DevicesChanged wakes the status loop when devices change, so the scheduler sees them
	// without waiting for UpdateFrequency. nil never fires.
	DevicesChanged <-chan struct{}
	// VolumesInUse lists the attachable volumes set up on the node or about to be (the
	// volume manager); nil reports none.
	VolumesInUse func() []v1.UniqueVolumeName
	// VolumesReportedInUse takes the volumesInUse of each status the API server accepted
	// (the volume manager sets a volume up only once it is listed there); nil drops it.
	VolumesReportedInUse func([]v1.UniqueVolumeName)
	// RuntimeFeatures returns status.runtimeHandlers and status.features (nil features leave
	// the posted ones); nil reports neither.
	RuntimeFeatures func() ([]v1.NodeRuntimeHandler, *v1.NodeFeatures)
	// VolumesInUseChanged wakes the status loop when a volume is about to be set up: the
	// volume manager mounts it only once a status update has listed it. nil never fires.
	VolumesInUseChanged <-chan struct{}
	// OnRepeatedHeartbeatFailure runs when a status or lease update fails again after a retry;
	// the caller may close the heartbeat client's connections so a dead one is not reused.
	OnRepeatedHeartbeatFailure func()
	// View is where the controller publishes the Node and takes requests for a status update
	// now; nil gives it one of its own.
	View *View
	// Machine is the machine's facts, read once at start (ReadMachine); required.
	Machine *machine.Machine
	// Paths locate the root filesystem; HostPaths() when zero.
	Paths machine.MachinePaths
	Clock clock.WithTicker
}

func (o Options) withDefaults() Options {
	if o.Hostname == "" {
		o.Hostname = o.NodeName
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.UpdateFrequency <= 0 {
		o.UpdateFrequency = DefaultUpdateFrequency
	}
	if o.ReportFrequency <= 0 {
		o.ReportFrequency = DefaultReportFrequency
	}
	if o.LeaseDurationSeconds <= 0 {
		o.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	return o
}

func (d Deps) withDefaults() Deps {
	if d.Heartbeat == nil {
		d.Heartbeat = d.Client
	}
	if d.Client == nil {
		d.Client = d.Heartbeat
	}
	if d.Recorder == nil {
		d.Recorder = &record.FakeRecorder{} // nil channel: events are dropped
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.View == nil {
		d.View = NewView()
	}
	if d.Paths.Proc == "" {
		statfs, numCPU := d.Paths.Statfs, d.Paths.NumCPU
		d.Paths = machine.HostPaths()
		d.Paths.Statfs, d.Paths.NumCPU = statfs, numCPU
	}
	return d
}
