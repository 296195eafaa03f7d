// Package runtime turns desired pods into CRI calls and reads back what the runtime holds.
package runtime

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
)

// Labels and annotations nodelet puts on sandboxes and containers. They use the same keys as
// the upstream kubelet so runtime tools (crictl) and adoption of existing containers work.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	LabelManagedBy     = "io.kubernetes.container.managed-by" // sandbox-only marker isn't needed; kept for tools
	// LabelNode names the node a sandbox was created for, so several nodelets (tests, benchmarks)
	// can share one runtime and each cleans up only its own pods.
	LabelNode            = "io.nodelet.node"
	AnnotationHash       = "io.kubernetes.container.hash"
	AnnotationRestarts   = "io.kubernetes.container.restartCount"
	AnnotationTermPath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTermPolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationGrace      = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationPreStop    = "io.kubernetes.container.preStopHandler"
)

// AnnotationImage records the image as the pod spec names it; the runtime may report the
// resolved reference instead. (Added by the runtime helper.)
const AnnotationImage = "io.nodelet.container.image"

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
	RestartCount int
	User         *ContainerUser // as the runtime reports it; nil when it does not
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

// WaitingReason is why a container is not running yet.
type WaitingReason struct {
	Reason  string
	Message string
}

// Manager is the runtime side of pod lifecycle. Every call carries a deadline.
type Manager interface {
	// SyncPod brings the runtime in line with pod: sandbox, image pulls, init containers in
	// order, app containers per restartPolicy with crash-loop back-off.
	SyncPod(ctx context.Context, pod *v1.Pod, status *PodStatus, backoff *flowcontrol.Backoff) SyncResult
	// PullImages ensures, ahead of the SyncPod that starts them, the images of the containers
	// that sync would start (a pod waiting for a start slot pulls meanwhile); that SyncPod uses
	// the outcomes instead of pulling again.
	PullImages(ctx context.Context, pod *v1.Pod, status *PodStatus)
	// KillPod stops every container (honouring gracePeriod seconds, preStop first) and the sandbox.
	KillPod(ctx context.Context, pod *v1.Pod, running *RunningPod, gracePeriod int64) error
	// RemovePod deletes the pod's stopped containers and sandboxes from the runtime.
	RemovePod(ctx context.Context, uid types.UID) error
	// GetPodStatus reads the runtime state for one pod.
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error)
	// GetPods lists pods on the runtime; all=false keeps only those with a running container
	// or a ready sandbox.
	GetPods(ctx context.Context, all bool) ([]*RunningPod, error)
	// Status reports runtime health (CRI Status) for node readiness and healthz.
	Status(ctx context.Context) error
	// Version returns the runtime name and version, e.g. "containerd", "1.6.20".
	Version(ctx context.Context) (name, version string, err error)
}

// BackoffKey names a container's crash-loop back-off entry (shared by the runtime manager,
// which consults it, and the pod syncer, which clears it when a pod goes away). The image is
// part of it: a new image is a fix worth trying at once.
func BackoffKey(pod *v1.Pod, c *v1.Container) string {
	return pod.Namespace + "_" + pod.Name + "_" + string(pod.UID) + "_" + c.Name + "_" + c.Image
}
