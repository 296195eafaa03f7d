package container

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
)

// Runtime is the runtime side of pod lifecycle. Every call carries a deadline.
type Runtime interface {
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

// LogService is the CRI side of container logs: the log file of one container (for
// /containerLogs), the running containers' log files and reopening a log after it was
// rotated (for log rotation). kuberuntime.Manager implements it.
type LogService interface {
	// ContainerLog returns the container's log path and state; ErrContainerNotFound (wrapped)
	// when the runtime no longer has it.
	ContainerLog(ctx context.Context, containerID string) (*ContainerLog, error)
	// RunningContainerLogs lists every running container with its log path.
	RunningContainerLogs(ctx context.Context) ([]*ContainerLog, error)
	// ReopenContainerLog asks the runtime to reopen the container's log file, so it writes a
	// fresh file at the log path after the old one was renamed.
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// GarbageSource is what container garbage collection (internal/node/gc) needs from the runtime.
// kuberuntime.Manager implements it.
type GarbageSource interface {
	// GetPods lists the runtime's pods; GC asks for all of them, dead ones included.
	GetPods(ctx context.Context, all bool) ([]*RunningPod, error)
	// RemoveContainer deletes one container that is not running, with its log files and its
	// /var/log/containers symlink. A container in an unknown state is stopped first. A
	// container already gone is not an error.
	RemoveContainer(ctx context.Context, id string) error
	// RemoveSandbox stops (idempotent) and deletes one sandbox; a missing one is not an error.
	RemoveSandbox(ctx context.Context, id string) error
	// ContainerLog reports a container's state and log path; ErrContainerNotFound when gone.
	ContainerLog(ctx context.Context, containerID string) (*ContainerLog, error)
}

// ImageGarbageSource is what image garbage collection (internal/node/imagegc) needs from the
// runtime. images.Manager, the owner of the image service, implements it.
type ImageGarbageSource interface {
	// ImagesInUse gives the image references (resolved ref and the image as created) of
	// every container the runtime holds, dead ones and those of no Kubernetes pod included:
	// an image any container was made from is never removed.
	ImagesInUse(ctx context.Context) ([]string, error)
	ListImages(ctx context.Context) ([]Image, error)
	// RemoveImage deletes an image by ID; a missing one is not an error.
	RemoveImage(ctx context.Context, id string) error
	// ImageFsMountpoint is the mountpoint of the filesystem holding images (CRI ImageFsInfo).
	ImageFsMountpoint(ctx context.Context) (string, error)
}

// ExitWatcher reports container exits as they happen, so the PLEG can relist at once instead
// of finding them up to a relist period later. cri.Client implements it.
type ExitWatcher interface {
	// WatchExits calls exited with the container's ID for every container that stops, until
	// ctx ends or the stream breaks. It returns ErrNoExitEvents if the runtime has no such
	// stream.
	WatchExits(ctx context.Context, exited func(containerID string)) error
}

// ContainerKiller stops one container of a pod, as the prober needs after a liveness or
// startup probe failure. kuberuntime.Manager implements it.
type ContainerKiller interface {
	// KillContainer runs the container's preStop hook and stops it within gracePeriod seconds
	// (< 0: the pod's terminationGracePeriodSeconds). message is the text of the Killing event.
	// containerID may carry the "<runtime>://" prefix of the API status. A container that is
	// gone or not running is not an error.
	KillContainer(ctx context.Context, pod *v1.Pod, containerID string, gracePeriod int64, message string) error
}
