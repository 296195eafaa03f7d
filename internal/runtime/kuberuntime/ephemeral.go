package kuberuntime

import (
	"context"
	"fmt"
	"path/filepath"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/cri"
)

// LabelEphemeral marks a runtime container started from pod.spec.ephemeralContainers, so tools
// and later readers can tell debug containers from the pod's own.
const LabelEphemeral = "io.nodelet.container.ephemeral"

// ephemeralToStart returns the pod's ephemeral containers that have no runtime instance yet,
// in spec order. An ephemeral container runs at most once per pod: an instance that exists in
// any sandbox, running or exited, is never started again, whatever the restart policy.
func ephemeralToStart(pod *v1.Pod, status *container.PodStatus) []*v1.EphemeralContainer {
	var out []*v1.EphemeralContainer
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if status.FindContainer(ec.Name) == nil {
			out = append(out, ec)
		}
	}
	return out
}

// ephemeralRef names an ephemeral container in events.
func ephemeralRef(pod *v1.Pod, name string) *v1.ObjectReference {
	ref := container.ContainerRef(pod, nil)
	ref.FieldPath = fmt.Sprintf("spec.ephemeralContainers{%s}", name)
	return ref
}

// startEphemeral pulls, creates and starts one ephemeral container in the sandbox sb. Its CRI
// config is a regular container's; a targetContainerName puts it into the PID namespace of
// that container's running instance in the same sandbox. Failures land in res.Waiting; a
// container whose start failed is removed again so a later sync can try once more.
func (m *Manager) startEphemeral(ctx context.Context, pod *v1.Pod, sb *sandboxInfo, podStatus *container.PodStatus, ec *v1.EphemeralContainer, res *container.SyncResult) {
	c := v1.Container(ec.EphemeralContainerCommon)
	ref := ephemeralRef(pod, c.Name)
	fail := func(reason string, err error) {
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %v", err)
		res.Waiting[c.Name] = container.WaitingReason{Reason: reason, Message: err.Error()}
		res.SetErr(fmt.Errorf("%s: ephemeral container %s: %w", reason, c.Name, err))
	}

	var targetID string
	if ec.TargetContainerName != "" {
		targetID = runningInSandbox(podStatus, sb.id, ec.TargetContainerName)
		if targetID == "" {
			// The target may simply not be up yet; the sync after it starts tries again.
			fail(ReasonCreateContainerConfigError, fmt.Errorf("target container %q is not running", ec.TargetContainerName))
			return
		}
	}

	if m.imageVolumesFailed(ref, &c, sb, res) {
		return
	}
	imageRef, reason, msg, err := m.images.EnsureImage(ctx, pod, &c, m.pullSecrets(pod), m.pullSandbox(pod, sb.config))
	if err != nil {
		res.Waiting[c.Name] = container.WaitingReason{Reason: reason, Message: msg}
		res.SetErr(err)
		return
	}
	cfg, err := m.containerConfig(ctx, pod, &c, sb, 0, imageRef)
	if err != nil {
		fail(ReasonCreateContainerConfigError, err)
		return
	}
	markEphemeral(cfg, targetID)

	ctype := metrics.ContainerType(pod, c.Name)
	metrics.StartedContainer(ctype)
	id, err := m.cri.CreateContainer(ctx, sb.id, cfg, sb.config)
	countImageVolumes(sb, &c, err)
	if err != nil {
		metrics.StartContainerFailed(ctype, status.Code(err).String())
		fail(ReasonCreateContainerError, err)
		return
	}
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Created", "Created container %s", c.Name)
	if err := m.cri.StartContainer(ctx, id); err != nil {
		metrics.StartContainerFailed(ctype, status.Code(err).String())
		fail(ReasonRunContainerError, err)
		if rmErr := m.cri.RemoveContainer(ctx, id); rmErr != nil && !cri.IsNotFound(rmErr) {
			klog.InfoS("Cannot remove ephemeral container that failed to start", "pod", klog.KObj(pod), "container", c.Name, "id", id, "err", rmErr)
		}
		return
	}
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	m.logLinks.Link(pod, c.Name, id, filepath.Join(sb.config.LogDirectory, cfg.LogPath))
	klog.V(2).InfoS("Started ephemeral container", "pod", klog.KObj(pod), "container", c.Name, "id", id, "target", ec.TargetContainerName)
}

// markEphemeral labels cfg as an ephemeral container's and, given a target container ID,
// moves it into that container's PID namespace. A pod that shares one PID namespace among its
// containers (or uses the host's) keeps that mode: the target is in it already.
func markEphemeral(cfg *runtimeapi.ContainerConfig, targetID string) {
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	cfg.Labels[LabelEphemeral] = "true"
	if targetID == "" {
		return
	}
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns != nil && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid = runtimeapi.NamespaceMode_TARGET
		ns.TargetId = targetID
	}
}

// runningInSandbox returns the ID of the named container's running instance in sandbox
// sandboxID, or "".
func runningInSandbox(status *container.PodStatus, sandboxID, name string) string {
	for _, c := range status.Containers {
		if c.Name == name && c.SandboxID == sandboxID && c.State == container.StateRunning {
			return c.ID
		}
	}
	return ""
}
