// Package shutdown is graceful node shutdown: the pods terminated group by group, lowest
// priority first, when the node is about to shut down.
//
// When systemd-logind announces a shutdown (or, where there is no logind, when nodelet is told
// to stop) and shutdownGracePeriod (or shutdownGracePeriodByPodPriority) is configured, each
// group stops within its share of the budget, and the pods are recorded as upstream does (phase
// Failed, reason Terminated, a DisruptionTarget condition), while the node reports NotReady and
// refuses new pods.
package shutdown

import (
	"context"
	"errors"
	"sort"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/nodelet/nodelet/internal/pod/status"
)

// Upstream's reasons and messages.
const (
	Reason              = "Terminated"
	Message             = "Pod was terminated in response to imminent node shutdown."
	NotAdmittedReason   = "NodeShutdown"
	notAdmittedMessage  = "Pod was rejected as the node is shutting down."
	systemCriticalFloor = 2000000000 // system-cluster-critical
)

// ErrShuttingDown is the node's NotReady cause while pods are being terminated.
var ErrShuttingDown = errors.New("node is shutting down")

// Group is a priority band and the time its pods get: pods whose priority is at least
// Priority (and below the next group's) are terminated together.
type Group struct {
	Priority    int32
	GracePeriod time.Duration
}

// Groups turns the configuration into bands, lowest priority first; none when graceful
// shutdown is off. shutdownGracePeriod splits into regular pods (total minus the critical
// share) and system-critical ones, as upstream migrates it.
func Groups(kc *kubeletconfigv1beta1.KubeletConfiguration) []Group {
	var out []Group
	if len(kc.ShutdownGracePeriodByPodPriority) > 0 {
		for _, g := range kc.ShutdownGracePeriodByPodPriority {
			out = append(out, Group{Priority: g.Priority, GracePeriod: time.Duration(g.ShutdownGracePeriodSeconds) * time.Second})
		}
	} else if total := kc.ShutdownGracePeriod.Duration; total > 0 {
		critical := kc.ShutdownGracePeriodCriticalPods.Duration
		out = []Group{{Priority: 0, GracePeriod: total - critical}, {Priority: systemCriticalFloor, GracePeriod: critical}}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out
}

// Deps are what the manager acts through.
type Deps struct {
	// ActivePods are the pods running now.
	ActivePods func() []*v1.Pod
	// Kill records the pod's terminal status (via setStatus) and stops it with the grace
	// period; Gone reports when its containers are stopped.
	Kill func(pod *v1.Pod, grace int64, setStatus func(*v1.PodStatus))
	Gone func(pod *v1.Pod) bool
	// StatusChanged is called when the node starts or stops shutting down (to post the Ready
	// condition now, not at the next status update).
	StatusChanged func()
	// Event records a NodeShutdown event on the Node (logind's signals only).
	Event func(message string)
}

// Manager runs the shutdown and answers admission and readiness meanwhile.
type Manager struct {
	groups   []Group
	deps     Deps
	active   atomic.Bool
	watching atomic.Bool // a Follower holds logind's lock
	poll     time.Duration
}

// New returns a manager for groups (see Groups).
func New(groups []Group, deps Deps) *Manager {
	return &Manager{groups: groups, deps: deps, poll: 100 * time.Millisecond}
}

// Status is ErrShuttingDown once the shutdown started, for the Ready condition.
func (m *Manager) Status() error {
	if m.active.Load() {
		return ErrShuttingDown
	}
	return nil
}

// Admit refuses every new pod once the shutdown started.
func (m *Manager) Admit(*v1.Pod) (bool, string, string) {
	if m.active.Load() {
		return false, NotAdmittedReason, notAdmittedMessage
	}
	return true, "", ""
}

// Shutdown terminates the pods group by group and returns when the last group is done or its
// time is up (or ctx ends).
func (m *Manager) Shutdown(ctx context.Context) {
	m.active.Store(true)
	klog.InfoS("Shutting down the node's pods", "groups", len(m.groups))
	if m.deps.StatusChanged != nil {
		m.deps.StatusChanged()
	}
	pods := m.deps.ActivePods()
	for i, g := range m.groups {
		var members []*v1.Pod
		for _, p := range pods {
			if m.groupOf(p) == i {
				members = append(members, p)
			}
		}
		if len(members) == 0 {
			continue
		}
		m.terminate(ctx, g, members)
	}
	klog.InfoS("Node shutdown: pods terminated")
}

// groupOf is the band of pod's priority: the last group whose floor it reaches (the first
// group takes everything below).
func (m *Manager) groupOf(pod *v1.Pod) int {
	var priority int32
	if pod.Spec.Priority != nil {
		priority = *pod.Spec.Priority
	}
	idx := 0
	for i, g := range m.groups {
		if priority >= g.Priority {
			idx = i
		}
	}
	return idx
}

func (m *Manager) terminate(ctx context.Context, g Group, pods []*v1.Pod) {
	budget := int64(g.GracePeriod / time.Second)
	for _, p := range pods {
		grace := budget
		if p.Spec.TerminationGracePeriodSeconds != nil && *p.Spec.TerminationGracePeriodSeconds < grace {
			grace = *p.Spec.TerminationGracePeriodSeconds
		}
		klog.V(1).InfoS("Node shutdown: terminating pod", "pod", klog.KObj(p), "gracePeriod", grace, "priority", g.Priority)
		m.deps.Kill(p, grace, setShutdownStatus)
	}
	ctx, cancel := context.WithTimeout(ctx, g.GracePeriod)
	defer cancel()
	ticker := time.NewTicker(m.poll)
	defer ticker.Stop()
	for {
		left := 0
		for _, p := range pods {
			if !m.deps.Gone(p) {
				left++
			}
		}
		if left == 0 {
			return
		}
		select {
		case <-ctx.Done():
			klog.InfoS("Node shutdown: the group's time is up", "priority", g.Priority, "gracePeriod", g.GracePeriod, "podsLeft", left)
			return
		case <-ticker.C:
		}
	}
}

// setShutdownStatus marks a pod terminated by the shutdown, as upstream: Failed (unless it
// already succeeded), reason Terminated, and a DisruptionTarget condition.
func setShutdownStatus(st *v1.PodStatus) {
	phase := v1.PodFailed
	if st.Phase == v1.PodSucceeded {
		phase = v1.PodSucceeded
	}
	status.SetTerminal(st, phase, Reason, Message)
	cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: Message, LastTransitionTime: metav1.Now()}
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1.DisruptionTarget {
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}
