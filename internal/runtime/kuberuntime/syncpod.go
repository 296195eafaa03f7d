package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/podspec/podhooks"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Waiting reasons SyncPod reports besides the image ones.
const (
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
)

// SyncPod computes what the pod needs and then does it: sandbox, next init container or the
// app containers, each restart gated by crash-loop back-off, then any ephemeral container
// not started yet (those never wait for init containers and are never restarted).
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, status *container.PodStatus, backoff *flowcontrol.Backoff) container.SyncResult {
	res := container.SyncResult{Waiting: map[string]container.WaitingReason{}}
	if status == nil {
		status = &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	acts := computeActions(pod, status, m.startedFor(pod))
	resize := m.computeResize(pod, status, &acts)
	klog.V(4).InfoS("SyncPod actions", "pod", klog.KObj(pod), "createSandbox", acts.createSandbox,
		"attempt", acts.attempt, "kill", len(acts.kill), "start", len(acts.start), "killPod", acts.killPod)
	if acts.killPod {
		res.Err = m.KillPod(ctx, pod, runningFromStatus(status), graceSeconds(pod))
		return res
	}

	var sb *sandboxInfo
	if acts.createSandbox {
		if err := m.replaceSandboxPrep(ctx, pod, status); err != nil {
			res.Err = err
			return res
		}
		// The pod's claims are prepared before its sandbox, as upstream: until they are, the
		// pod waits (the event says why) and the sync is retried.
		if err := m.preparePod(ctx, pod); err != nil {
			var pe *podhooks.PrepareError
			if errors.As(err, &pe) {
				m.recorder.Eventf(container.ContainerRef(pod, nil), v1.EventTypeWarning, pe.Reason, "Failed to %s: %v", pe.Action, pe.Err)
			}
			klog.ErrorS(err, "Preparing the pod failed", "pod", klog.KObj(pod))
			res.Err = err
			return res
		}
		waitPulls := m.pullBesideSandbox(ctx, pod, status)
		var err error
		sb, err = m.createSandbox(ctx, pod, acts.attempt)
		waitPulls()
		if err != nil {
			m.recorder.Eventf(container.ContainerRef(pod, nil), v1.EventTypeWarning, "FailedCreatePodSandBox",
				"Failed to create pod sandbox: %v", err)
			res.Err = err
			return res
		}
		klog.V(2).InfoS("Created pod sandbox", "pod", klog.KObj(pod), "sandbox", sb.id, "attempt", acts.attempt, "ips", sb.ips)
	}

	notStopped := map[string]bool{}
	running := runningFromStatus(status)
	for _, k := range acts.kill {
		if err := m.killContainer(ctx, pod, running, k.status, graceSeconds(pod), k.message, nil); err != nil {
			notStopped[k.status.Name] = true
			res.SetErr(err)
		}
	}

	if !resize.empty() {
		res.Resized, res.ResizeErr = true, m.applyResize(ctx, pod, resize)
		if res.ResizeErr != nil {
			klog.ErrorS(res.ResizeErr, "Pod resize not done; retrying at the next sync", "pod", klog.KObj(pod))
			res.SetErr(res.ResizeErr)
		}
	}

	// Ephemeral containers join a sandbox that is (or was just made) ready; a finished pod
	// gets none.
	var ephemeral []*v1.EphemeralContainer
	if acts.sandbox != nil || sb != nil {
		ephemeral = ephemeralToStart(pod, status)
	}
	if sb == nil && len(acts.start)+len(ephemeral) > 0 {
		cfg, err := m.sandboxConfig(ctx, pod, acts.sandbox.Attempt)
		if err != nil {
			res.SetErr(fmt.Errorf("generate sandbox config: %w", err))
			return res
		}
		sb = &sandboxInfo{id: acts.sandbox.ID, config: cfg, ips: acts.sandbox.IPs}
	}
	if len(acts.start)+len(ephemeral) > 0 {
		// Only for a sync that starts something: upstream ensures them at every sync, which
		// for a running pod only repeats "already present" events.
		sb.imageVolumes = m.ensureImageVolumes(ctx, pod, sb)
	}
	for _, s := range acts.start {
		if notStopped[s.spec.Name] {
			continue // never two instances of one container
		}
		m.startContainer(ctx, pod, sb, s, backoff, &res)
	}
	for _, ec := range ephemeral {
		m.startEphemeral(ctx, pod, sb, status, ec, &res)
	}
	// Dead instances and old sandboxes stay: container garbage collection (internal/node/gc) owns
	// their removal.
	return res
}

// replaceSandboxPrep kills what still runs of the pod before its sandbox is replaced.
func (m *Manager) replaceSandboxPrep(ctx context.Context, pod *v1.Pod, status *container.PodStatus) error {
	if len(status.Sandboxes) == 0 {
		return nil
	}
	m.recorder.Event(container.ContainerRef(pod, nil), v1.EventTypeNormal, "SandboxChanged",
		"Pod sandbox changed, it will be killed and re-created.")
	live := &container.RunningPod{UID: status.UID, Name: status.Name, Namespace: status.Namespace}
	for _, sb := range status.Sandboxes {
		if sb.Ready {
			live.Sandboxes = append(live.Sandboxes, sb)
		}
	}
	live.Containers = status.Containers // KillPod stops only the running ones
	return m.KillPod(ctx, pod, live, graceSeconds(pod))
}

// startContainer pulls, creates and starts one container instance, unless crash-loop back-off
// holds it. Failures land in res.Waiting with their reason.
func (m *Manager) startContainer(ctx context.Context, pod *v1.Pod, sb *sandboxInfo, s containerStart, backoff *flowcontrol.Backoff, res *container.SyncResult) {
	c := s.spec
	ref := container.ContainerRef(pod, c)
	if s.prev != nil {
		m.timeline.RecordOnce(pod, "exited/"+s.prev.ID, timeline.Step{Name: timeline.ContainerExited, Container: c.Name,
			Start: s.prev.StartedAt, End: s.prev.FinishedAt, Detail: fmt.Sprintf("exit code %d %s", s.prev.ExitCode, s.prev.Reason)})
	}
	if s.backoff && backoff != nil {
		key := container.BackoffKey(pod, c)
		finished := s.prev.FinishedAt
		if finished.IsZero() {
			finished = s.prev.CreatedAt
		}
		if backoff.IsInBackOffSince(key, finished) {
			delay := backoff.Get(key)
			m.timeline.RecordOnce(pod, "backoff/"+s.prev.ID, timeline.Step{Name: timeline.BackOff, Container: c.Name,
				Start: finished, End: finished.Add(delay), Detail: fmt.Sprintf("back-off %s", delay)})
			res.Waiting[c.Name] = container.WaitingReason{
				Reason:  ReasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.Name, formatPod(pod)),
			}
			res.RequeueWithin(delay - backoff.Clock.Since(finished))
			m.recorder.Eventf(ref, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s",
				c.Name, formatPod(pod))
			return
		}
		backoff.Next(key, finished)
	}

	// As upstream, a missing image volume's image holds the container before its own image.
	if m.imageVolumesFailed(ref, c, sb, res) {
		return
	}
	img := m.image(ctx, pod, c, sb)
	if img.err != nil {
		// As upstream: the image manager's own events, then one naming the waiting reason.
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %s", img.reason)
		res.Waiting[c.Name] = container.WaitingReason{Reason: img.reason, Message: img.msg}
		res.SetErr(img.err)
		return
	}
	attempt := fmt.Sprintf("attempt %d", s.restartCount)
	fail := func(reason string, err error) {
		m.step(pod, timeline.StartFailed, c.Name, reason, attempt, time.Now(), err)
		m.recorder.Eventf(ref, v1.EventTypeWarning, "Failed", "Error: %v", err)
		res.Waiting[c.Name] = container.WaitingReason{Reason: reason, Message: err.Error()}
		res.SetErr(fmt.Errorf("%s: container %s: %w", reason, c.Name, err))
	}
	cfg, err := m.containerConfig(ctx, pod, c, sb, s.restartCount, img.ref)
	if err != nil {
		fail(ReasonCreateContainerConfigError, err)
		return
	}
	if err := m.recordActuated(pod, c); err != nil {
		fail(ReasonCreateContainerConfigError, err)
		return
	}
	ctype := metrics.ContainerType(pod, c.Name)
	metrics.StartedContainer(ctype)
	createDone := m.begin(pod, timeline.ContainerCreated, c.Name, "CreateContainer", attempt)
	id, err := m.cri.CreateContainer(ctx, sb.id, cfg, sb.config)
	createDone("", err)
	countImageVolumes(sb, c, err)
	if err != nil {
		metrics.StartContainerFailed(ctype, status.Code(err).String())
		fail(ReasonCreateContainerError, err)
		return
	}
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Created", "Created container %s", c.Name)
	startDone := m.begin(pod, timeline.ContainerStarted, c.Name, "StartContainer", attempt)
	err = m.cri.StartContainer(ctx, id)
	startDone("", err)
	if err != nil {
		metrics.StartContainerFailed(ctype, status.Code(err).String())
		fail(ReasonRunContainerError, err)
		return
	}
	m.recorder.Eventf(ref, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	m.logLinks.Link(pod, c.Name, id, filepath.Join(sb.config.LogDirectory, cfg.LogPath))
	klog.V(2).InfoS("Started container", "pod", klog.KObj(pod), "container", c.Name, "id", id, "restartCount", s.restartCount)
	if err := m.runPostStart(ctx, pod, c, id, sb, ref); err != nil {
		res.Waiting[c.Name] = container.WaitingReason{Reason: ReasonPostStartHookError, Message: err.Error()}
		res.SetErr(fmt.Errorf("%s: container %s: %w", ReasonPostStartHookError, c.Name, err))
	}
}

func formatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// graceSeconds is the pod's termination grace period, -1 when unset (default applies).
func graceSeconds(pod *v1.Pod) int64 {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return -1
}

func runningFromStatus(st *container.PodStatus) *container.RunningPod {
	return &container.RunningPod{UID: st.UID, Name: st.Name, Namespace: st.Namespace, Sandboxes: st.Sandboxes, Containers: st.Containers}
}

// preparePod runs the prepare hooks; a pod with ResourceClaims gets a timeline step, whose
// error names the claim that keeps it waiting (nodelet explain shows it).
func (m *Manager) preparePod(ctx context.Context, pod *v1.Pod) error {
	if len(pod.Spec.ResourceClaims) == 0 {
		return m.hooks.PreparePod(ctx, pod)
	}
	done := m.begin(pod, timeline.ClaimsPrepared, "", "NodePrepareResources", fmt.Sprintf("%d claims", len(pod.Spec.ResourceClaims)))
	err := m.hooks.PreparePod(ctx, pod)
	if pe := (*podhooks.PrepareError)(nil); errors.As(err, &pe) {
		done("", pe.Err)
	} else {
		done("", err)
	}
	return err
}
