// Package container holds what the rest of nodelet knows about containers and pods on the
// runtime: the statuses the runtime reports, the results of a pod sync, the labels nodelet puts
// on them, and small interfaces naming what each consumer needs from the pod runtime. It
// imports no CRI client, so packages that only read statuses do not link gRPC.
package container

import (
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Labels and annotations nodelet puts on sandboxes and containers: the upstream kubelet's own
// keys with its meaning, so that either one adopts what the other left running on a node
// handed over (and runtime tools such as crictl show them).
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	LabelManagedBy     = "io.kubernetes.managed-by" // sandbox-only marker isn't needed; kept for tools
	// LabelNode names the node a sandbox was created for, so several nodelets (tests, benchmarks)
	// can share one runtime and each cleans up only its own pods.
	LabelNode = "io.nodelet.node"
	// AnnotationHash is kubehash.ContainerHash of the spec, in hexadecimal.
	AnnotationHash          = "io.kubernetes.container.hash"
	AnnotationRestarts      = "io.kubernetes.container.restartCount"
	AnnotationTermPath      = "io.kubernetes.container.terminationMessagePath"
	AnnotationTermPolicy    = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPreStop       = "io.kubernetes.container.preStopHandler" // JSON of the v1.LifecycleHandler
	AnnotationPorts         = "io.kubernetes.container.ports"          // JSON of the []v1.ContainerPort
	AnnotationGrace         = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationDeletionGrace = "io.kubernetes.pod.deletionGracePeriod"
)

// The keys nodelet wrote before it wrote upstream's, still read so that containers an older
// nodelet started are adopted, not restarted. A legacy hash is nodelet's old hash of the spec.
const (
	LegacyLabelContainerName = "io.kubernetes.name"
	LegacyAnnotationHash     = "io.kubernetes.hash"
	LegacyAnnotationRestarts = "io.kubernetes.restartCount"
	LegacyAnnotationTermPath = "io.kubernetes.terminationMessagePath"
	LegacyAnnotationPolicy   = "io.kubernetes.terminationMessagePolicy"
	LegacyAnnotationPreStop  = "io.kubernetes.preStopHandler"
)

// Value returns key's value in m, or the legacy key's when only that one is there.
func Value(m map[string]string, key, legacy string) string {
	if v, ok := m[key]; ok {
		return v
	}
	return m[legacy]
}

// AnnotationImage records the image as the pod spec names it; the runtime may report the
// resolved reference instead. (Added by the runtime helper.)
const AnnotationImage = "io.nodelet.image"

// DefaultContainerLogsDir is where log collectors look for one symlink per container,
// <pod>_<namespace>_<container>-<containerID>.log, pointing at the CRI log file.
const DefaultContainerLogsDir = "/var/log/containers"

// ContainerState is the runtime's view of one container.
type ContainerState string

const (
	StateCreated ContainerState = "created"
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

// SandboxStatus is one pod sandbox as the runtime reports it.
type SandboxStatus struct {
	ID        string
	Ready     bool // CRI SANDBOX_READY
	CreatedAt time.Time
	Attempt   uint32
	IPs       []string // primary first; empty for host-network sandboxes
	HostNet   bool
}

// ContainerStatus is one container (current or a dead earlier instance) as the runtime reports it.
type ContainerStatus struct {
	ID           string
	Name         string
	SandboxID    string
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	Reason       string
	Message      string // termination message (from terminationMessagePath or log tail)
	Image        string // image as the pod spec names it
	ImageRef     string // resolved image ID / digest
	Hash         uint64 // hash of the v1.Container spec it was created from
	LegacyHash   bool   // Hash is an older nodelet's, not kubehash.ContainerHash
	RestartCount int
	User         *ContainerUser // as the runtime reports it; nil when it does not
	// StopSignal is the signal the runtime stops the container with ("SIGTERM"), as it
	// reports it; "" when it does not (containerd before 2.1).
	StopSignal string
	// Resources are the cpu and memory settings the runtime reports in effect; nil when it
	// reports none.
	Resources *ContainerResources
}

// PodStatus is everything the runtime holds for one pod UID. Sandboxes and Containers are
// sorted newest first, so Sandboxes[0] is the current sandbox.
type PodStatus struct {
	UID        types.UID
	Name       string
	Namespace  string
	IPs        []string // from the newest ready sandbox
	Sandboxes  []*SandboxStatus
	Containers []*ContainerStatus
	Timestamp  time.Time // when this status was read
}

// FindContainer returns the newest status for the named container, or nil.
func (s *PodStatus) FindContainer(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// RunningPod is a pod found on the runtime, for housekeeping and the PLEG.
type RunningPod struct {
	UID       types.UID
	Name      string
	Namespace string
	Node      string // LabelNode of its sandboxes; empty when none says

	Sandboxes  []*SandboxStatus
	Containers []*ContainerStatus
}

// OnNode says whether the pod belongs to node name: labelled for it, or not labelled at all,
// as what another kubelet (the upstream one, before a handover) left: that kubelet counted
// every pod of the runtime as its own, and so does nodelet after it.
func (p *RunningPod) OnNode(name string) bool { return p.Node == "" || p.Node == name }

// SyncResult reports what one SyncPod did and when the pod wants to be looked at again.
type SyncResult struct {
	// Err is the first error met; the pod is retried on the next sync.
	Err error
	// RequeueAfter, when non-zero, is the earliest time a back-off ends and a sync could progress.
	RequeueAfter time.Duration
	// Waiting reasons by container name (ErrImagePull, ImagePullBackOff, CrashLoopBackOff,
	// CreateContainerError ...), with messages, for the status computation.
	Waiting map[string]WaitingReason
	// Resized says SyncPod acted on an in-place resize; ResizeErr is what stopped it, if
	// anything (the next sync retries).
	Resized   bool
	ResizeErr error
}

// SetErr keeps the first error met.
func (r *SyncResult) SetErr(err error) {
	if r.Err == nil {
		r.Err = err
	}
}

// RequeueWithin keeps the earliest wanted requeue.
func (r *SyncResult) RequeueWithin(d time.Duration) {
	d = max(d, time.Millisecond)
	if r.RequeueAfter == 0 || d < r.RequeueAfter {
		r.RequeueAfter = d
	}
}

// WaitingReason is why a container is not running yet.
type WaitingReason struct {
	Reason  string
	Message string
}

// BackoffKey names a container's crash-loop back-off entry (shared by the runtime manager,
// which consults it, and the pod syncer, which clears it when a pod goes away). The image is
// part of it: a new image is a fix worth trying at once.
func BackoffKey(pod *v1.Pod, c *v1.Container) string {
	return pod.Namespace + "_" + pod.Name + "_" + string(pod.UID) + "_" + c.Name + "_" + c.Image
}

// ContainerUser is the Linux identity a container's first process got (status.user).
type ContainerUser struct {
	UID, GID           int64
	SupplementalGroups []int64
}

// ContainerResources are the cpu and memory settings the runtime reports for a container;
// nil fields were not reported.
type ContainerResources struct {
	CPULimit, CPURequest, MemoryLimit *resource.Quantity
}

// ErrContainerNotFound is returned (wrapped) when the runtime no longer knows a container.
var ErrContainerNotFound = errors.New("container not found")

// ContainerLog is a container's log file as the runtime reports it.
type ContainerLog struct {
	ContainerID string
	// Path is the CRI status.logPath (the sandbox log directory joined with the container's
	// log path); empty when the container logs nowhere.
	Path  string
	State ContainerState
}

// Image is one image the runtime holds, as image garbage collection sees it.
type Image struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	Size        uint64
	// Pinned images are never removed (containerd pins its sandbox image).
	Pinned bool
}

// ErrNoExitEvents means the runtime offers neither CRI container events nor containerd's
// task events; relisting alone finds exits.
var ErrNoExitEvents = errors.New("the runtime streams no container exit events")
