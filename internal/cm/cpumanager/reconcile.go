package cpumanager

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// Run is the reconcile loop of the static policy: every ReconcilePeriod it releases the CPUs
// of pods that are gone and sets each running container's cpuset to what the state says
// (its exclusive CPUs, or the shared pool as it is now), as upstream's loop does.
func (m *Manager) Run(ctx context.Context) error {
	if m.static == nil {
		return nil
	}
	wait.UntilWithContext(ctx, m.Reconcile, m.opts.ReconcilePeriod)
	return nil
}

// Reconcile is one pass of the loop.
func (m *Manager) Reconcile(ctx context.Context) {
	if m.static == nil {
		return
	}
	pods := m.activePods()
	m.removeStale(pods)
	for _, pod := range pods {
		status, ok := m.opts.PodStatus(pod.UID)
		if !ok {
			continue
		}
		for _, c := range allContainers(pod) {
			m.reconcileContainer(ctx, pod, c.Name, status)
		}
	}
}

func (m *Manager) activePods() []*v1.Pod {
	if m.opts.ActivePods == nil {
		return nil
	}
	return m.opts.ActivePods()
}

// reconcileContainer sets a running container's cpuset when it differs from what was last set.
func (m *Manager) reconcileContainer(ctx context.Context, pod *v1.Pod, name string, status v1.PodStatus) {
	id, running := runningContainer(status, name)
	if !running {
		return
	}
	uid := string(pod.UID)
	m.mu.Lock()
	want, ok := m.state.assigned.get(uid, name)
	if !ok {
		want = m.state.defaultSet
	}
	last, applied := m.applied.get(uid, name)
	m.mu.Unlock()
	if want.IsEmpty() || (applied && last.Equals(want)) {
		return
	}
	updateCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := m.opts.SetContainerCPUs(updateCtx, id, want); err != nil {
		klog.ErrorS(err, "ReconcileState: failed to update container", "pod", klog.KObj(pod), "containerName", name, "containerID", id, "cpuSet", want.String())
		return
	}
	m.mu.Lock()
	m.applied.set(uid, name, want)
	m.mu.Unlock()
	klog.V(4).InfoS("ReconcileState: updated container cpuset", "pod", klog.KObj(pod), "containerName", name, "cpuSet", want.String())
}

// runningContainer returns the runtime ID of the named container when it is running.
func runningContainer(status v1.PodStatus, name string) (id string, running bool) {
	for _, list := range [][]v1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name && cs.State.Running != nil && cs.ContainerID != "" {
				return podutil.BareContainerID(cs.ContainerID), true
			}
		}
	}
	return "", false
}

// removeStale releases the CPUs of containers that no active pod has. A pod missing from the
// active ones is released only when it was missing at the previous pass too, and only once
// every pod source has been seen.
func (m *Manager) removeStale(active []*v1.Pod) {
	if m.opts.SourcesReady != nil && !m.opts.SourcesReady() {
		return
	}
	names := map[string]map[string]bool{}
	for _, pod := range active {
		names[string(pod.UID)] = map[string]bool{}
		for _, c := range allContainers(pod) {
			names[string(pod.UID)][c.Name] = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	missing := map[string]bool{}
	for uid, containers := range m.state.assigned {
		if names[uid] == nil && !m.missing[uid] {
			missing[uid] = true
			continue
		}
		for name := range containers {
			if !names[uid][name] {
				klog.InfoS("RemoveStaleState: removing container", "podUID", uid, "containerName", name)
				m.static.release(&m.state, uid, name)
				m.applied.remove(uid, name)
				changed = true
			}
		}
	}
	m.missing = missing
	for uid := range m.applied {
		if names[uid] == nil {
			delete(m.applied, uid) // what was set on a gone pod's containers
		}
	}
	if changed {
		m.publishPools()
		if err := m.save(); err != nil {
			klog.ErrorS(err, "Failed to store CPU manager state")
		}
	}
}
