// Package status computes a pod's API status from its spec and what the runtime holds, and keeps
// the latest status of every pod. Standalone and cluster mode share this one computation.
package status

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/podspec/qos"
	"github.com/nodelet/nodelet/internal/podspec/sidecar"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Input is everything one status computation looks at.
type Input struct {
	Pod         *v1.Pod
	Runtime     *container.PodStatus
	Waiting     map[string]container.WaitingReason // from the last SyncPod
	Previous    *v1.PodStatus                      // last computed status, for transition times
	RuntimeName string                             // container ID scheme, e.g. "containerd"
	HostIPs     []string
	// Ready and Started are the prober's readiness and startup results for a running container
	// instance; nil means running is ready and started.
	Ready   func(name, containerID string) bool
	Started func(name, containerID string) bool
	Now     metav1.Time
	// Verdict is the syncer's decision on the whole pod, if it made one.
	Verdict *Verdict
	// Final says the pod's containers were stopped for good (it is being deleted): whatever
	// its restart policy, its phase is now Succeeded or Failed.
	Final bool
	// SupportsRecursiveReadOnly says the pod's runtime handler makes recursive read-only
	// mounts (containerStatuses[].volumeMounts).
	SupportsRecursiveReadOnly bool
	// StopSignals is the ContainerStopSignals feature gate: containerStatuses[].stopSignal.
	StopSignals bool
}

// Verdict overrides the computed phase (when Phase is set) and gives the pod-level reason:
// a soft admission refusal keeps the pod Pending with a reason; an exceeded active deadline
// fails it.
type Verdict struct {
	Phase           v1.PodPhase
	Reason, Message string
}

// Compute returns the API status of in.Pod. It never moves a terminal phase back.
func Compute(in Input) v1.PodStatus {
	pod := in.Pod
	st := v1.PodStatus{QOSClass: qos.Class(pod)}
	if in.Previous != nil {
		st.StartTime = in.Previous.StartTime
	}
	if st.StartTime == nil {
		now := in.Now
		st.StartTime = &now
	}
	st.InitContainerStatuses = containerStatuses(in, pod.Spec.InitContainers, true)
	st.ContainerStatuses = containerStatuses(in, pod.Spec.Containers, false)
	st.EphemeralContainerStatuses = ephemeralStatuses(in) // kept out of phase and conditions
	capTerminationMessages(pod, &st)
	st.Phase = Phase(&pod.Spec, st.InitContainerStatuses, st.ContainerStatuses)
	if in.Final && !IsTerminal(st.Phase) {
		st.Phase = finalPhase(st.ContainerStatuses)
	}
	if v := in.Verdict; v != nil && v.Phase != "" {
		st.Phase = v.Phase
	}
	if in.Previous != nil && IsTerminal(in.Previous.Phase) {
		st.Phase = in.Previous.Phase
	}
	if in.Runtime != nil {
		for _, ip := range in.Runtime.IPs {
			st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip})
		}
	}
	for _, ip := range in.HostIPs {
		st.HostIPs = append(st.HostIPs, v1.HostIP{IP: ip})
	}
	if len(st.HostIPs) > 0 {
		st.HostIP = st.HostIPs[0].IP
		if pod.Spec.HostNetwork && len(st.PodIPs) == 0 {
			st.PodIPs = []v1.PodIP{{IP: st.HostIP}}
		}
	}
	if len(st.PodIPs) > 0 {
		st.PodIP = st.PodIPs[0].IP
	}
	st.Conditions = conditions(in, &st)
	if in.Previous != nil {
		// Set once by whoever stopped the pod (the eviction manager); nodelet does not derive it.
		for _, c := range in.Previous.Conditions {
			if c.Type == v1.DisruptionTarget {
				st.Conditions = append(st.Conditions, c)
			}
		}
	}
	switch {
	case in.Previous != nil && IsTerminal(in.Previous.Phase):
		st.Reason, st.Message = in.Previous.Reason, in.Previous.Message
	case in.Verdict != nil:
		st.Reason, st.Message = in.Verdict.Reason, in.Verdict.Message
	}
	return st
}

// IsTerminal says whether phase is Succeeded or Failed, which a pod never leaves.
func IsTerminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// finalPhase is the phase of a pod that will run no more: Succeeded only if every app
// container ran and exited 0.
func finalPhase(apps []v1.ContainerStatus) v1.PodPhase {
	for _, cs := range apps {
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			return v1.PodFailed
		}
	}
	return v1.PodSucceeded
}

// Phase derives the pod phase from container statuses the way the kubelet defines it:
// Pending until every container has started at least once (sidecars: passed their startup
// probe), Running while any runs or will be restarted, Succeeded/Failed once all app
// containers have stopped for good. Stopped sidecars do not count.
func Phase(spec *v1.PodSpec, inits, apps []v1.ContainerStatus) v1.PodPhase {
	initDone, initFailed := initProgress(spec, inits)
	if initFailed && spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	var n phaseCounts
	sidecarsPending := n.addSidecars(spec, inits)
	if !initDone || (sidecarsPending && !anyStarted(apps)) {
		return v1.PodPending
	}
	for _, cs := range apps {
		switch {
		case cs.State.Running != nil:
			n.running++
		case cs.State.Terminated != nil:
			n.stopped++
			if cs.State.Terminated.ExitCode == 0 {
				n.succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			n.stopped++ // has run before; it is between restarts
		case cs.State.Waiting != nil:
			n.waiting++
		default:
			n.unknown++
		}
	}
	switch {
	case n.waiting > 0:
		return v1.PodPending
	case n.running > 0 && n.unknown == 0:
		return v1.PodRunning
	case n.running == 0 && n.stopped > 0 && n.unknown == 0:
		switch {
		case spec.RestartPolicy == v1.RestartPolicyAlways:
			return v1.PodRunning
		case n.stopped == n.succeeded:
			return v1.PodSucceeded
		case spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		default:
			return v1.PodRunning // OnFailure: the failed ones come back
		}
	}
	return v1.PodPending
}

// phaseCounts counts containers by what they mean for the phase.
type phaseCounts struct {
	running, waiting, stopped, succeeded, unknown int
}

// initProgress reports whether every regular init container has succeeded, and whether one
// failed.
func initProgress(spec *v1.PodSpec, inits []v1.ContainerStatus) (done, failed bool) {
	done = true
	for i := range spec.InitContainers {
		if i >= len(inits) {
			return false, failed
		}
		if sidecar.Is(&spec.InitContainers[i]) {
			continue
		}
		cs := inits[i]
		term := cs.State.Terminated
		if term == nil && cs.State.Waiting != nil {
			term = cs.LastTerminationState.Terminated
			done = false
		}
		switch {
		case term == nil:
			done = false
		case term.ExitCode != 0:
			failed, done = true, false
		}
	}
	return done, failed
}

// addSidecars counts the sidecars as upstream: a running one is running, one that never ran
// is waiting, a stopped one does not count. It reports whether one has not started yet.
func (n *phaseCounts) addSidecars(spec *v1.PodSpec, inits []v1.ContainerStatus) (pending bool) {
	for i := range spec.InitContainers {
		if !sidecar.Is(&spec.InitContainers[i]) {
			continue
		}
		if i >= len(inits) {
			n.unknown++
			continue
		}
		cs := inits[i]
		switch {
		case cs.State.Running != nil:
			n.running++
			pending = pending || cs.Started == nil || !*cs.Started
		case cs.State.Terminated != nil, cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			// stopped (or between restarts): does not count
		case cs.State.Waiting != nil:
			n.waiting++
			pending = true
		default:
			n.unknown++
			pending = true
		}
	}
	return pending
}

// anyStarted reports whether an app container has run: then the pod was initialized, and a
// restarting sidecar does not make it Pending again.
func anyStarted(apps []v1.ContainerStatus) bool {
	for _, cs := range apps {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// stopSignal is the signal the container is stopped with, as upstream reports it: the
// runtime's answer, else (a runtime that does not report it) the spec's, else none.
func stopSignal(current *container.ContainerStatus, c v1.Container) *v1.Signal {
	if current.StopSignal != "" {
		return ptr.To(v1.Signal(current.StopSignal))
	}
	if c.Lifecycle != nil {
		return c.Lifecycle.StopSignal
	}
	return nil
}

func containerStatuses(in Input, containers []v1.Container, init bool) []v1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, 0, len(containers))
	for _, c := range containers {
		out = append(out, containerStatus(in, c, init))
	}
	return out
}

func containerStatus(in Input, c v1.Container, init bool) v1.ContainerStatus {
	// Started is always there, false until the container runs and its startupProbe passed, as
	// upstream's prober fills it for every container.
	cs := v1.ContainerStatus{Name: c.Name, Image: c.Image, VolumeMounts: volumeMountStatuses(c, in.SupportsRecursiveReadOnly), Started: ptr.To(false)}
	regularInit := init && !sidecar.Is(&c) // ready once it has done its job, not while it runs
	current, previous := instances(in.Runtime, c.Name)
	if current != nil && current.Image != "" {
		cs.Image = current.Image // what runs, not what the spec was changed to since
	}
	if previous != nil && previous.State == container.StateExited {
		cs.LastTerminationState = v1.ContainerState{Terminated: terminated(in.RuntimeName, previous)}
	}
	if current != nil && current.User != nil {
		u := current.User
		cs.User = &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: u.UID, GID: u.GID, SupplementalGroups: u.SupplementalGroups}}
	}
	if current != nil && in.StopSignals {
		cs.StopSignal = stopSignal(current, c)
	}
	if w, ok := in.Waiting[c.Name]; ok {
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
		if current != nil {
			cs.RestartCount = int32(current.RestartCount)
			cs.ImageID = current.ImageRef
			if current.State == container.StateExited {
				cs.LastTerminationState = v1.ContainerState{Terminated: terminated(in.RuntimeName, current)}
			}
		}
		return cs
	}
	if current == nil {
		// With init containers, everything not yet created waits on initialization.
		reason := "ContainerCreating"
		if len(in.Pod.Spec.InitContainers) > 0 && (init || !initsDone(in)) {
			reason = "PodInitializing"
		}
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
		return cs
	}
	cs.RestartCount = int32(current.RestartCount)
	cs.ImageID = current.ImageRef
	cs.ContainerID = containerID(in.RuntimeName, current.ID)
	switch current.State {
	case container.StateRunning:
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(current.StartedAt)}}
		started := in.Started == nil || in.Started(c.Name, cs.ContainerID)
		cs.Started = &started
		cs.Ready = started && !regularInit && (in.Ready == nil || in.Ready(c.Name, cs.ContainerID))
	case container.StateExited:
		cs.State = v1.ContainerState{Terminated: terminated(in.RuntimeName, current)}
		cs.Ready = regularInit && current.ExitCode == 0
	default:
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
	return cs
}

// instances returns the newest and the one-before-newest runtime containers with this name.
func instances(rs *container.PodStatus, name string) (current, previous *container.ContainerStatus) {
	if rs == nil {
		return nil, nil
	}
	for _, c := range rs.Containers {
		if c.Name != name {
			continue
		}
		if current == nil {
			current = c
		} else {
			return current, c
		}
	}
	return current, nil
}

// initsDone reports whether every init container is done: exited 0, or for a sidecar,
// running and started.
func initsDone(in Input) bool {
	for _, c := range in.Pod.Spec.InitContainers {
		cur, _ := instances(in.Runtime, c.Name)
		switch {
		case cur == nil:
			return false
		case sidecar.Is(&c):
			if cur.State != container.StateRunning || (in.Started != nil && !in.Started(c.Name, cur.ID)) {
				return false
			}
		case cur.State != container.StateExited || cur.ExitCode != 0:
			return false
		}
	}
	return true
}

func terminated(runtimeName string, c *container.ContainerStatus) *v1.ContainerStateTerminated {
	reason := c.Reason
	if reason == "" || reason == "Completed" || reason == "Error" {
		reason = "Completed"
		if c.ExitCode != 0 {
			reason = "Error"
		}
	}
	return &v1.ContainerStateTerminated{
		ExitCode:    c.ExitCode,
		Reason:      reason,
		Message:     c.Message,
		StartedAt:   metav1.NewTime(c.StartedAt),
		FinishedAt:  metav1.NewTime(c.FinishedAt),
		ContainerID: containerID(runtimeName, c.ID),
	}
}

func containerID(runtimeName, id string) string {
	if runtimeName == "" {
		runtimeName = "containerd"
	}
	return fmt.Sprintf("%s://%s", strings.ToLower(runtimeName), id)
}
