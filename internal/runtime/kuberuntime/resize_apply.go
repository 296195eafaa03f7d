package kuberuntime

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// applyResize sets a resize's new resources on the pod cgroup and the containers in upstream's
// safe order: memory, then cpu; for each, a growing pod cgroup setting before the containers
// and a shrinking one after them, and among the containers decreases before increases. It
// stops at the first error: the next sync picks up what is left.
func (m *Manager) applyResize(ctx context.Context, pod *v1.Pod, plan resizePlan) error {
	var cur, want PodCgroupConfig
	if m.podCgroups != nil {
		var err error
		if cur, want, err = m.podCgroups.PodConfig(pod); err != nil {
			return err
		}
	}
	setPod := func(c PodCgroupConfig) func() error {
		if m.podCgroups == nil {
			return nil
		}
		return func() error { return m.podCgroups.SetPodConfig(pod, c) }
	}
	if plan.restart || plan.changes(v1.ResourceMemory) {
		if m.podCgroups != nil {
			if want.Memory == unlimitedSetting {
				want.Memory = cur.Memory // as upstream, a pod memory limit is never lifted
			} else if err := m.checkPodMemoryUsage(pod, want.Memory); err != nil {
				return err
			}
		}
		limit := podSetting{from: cur.Memory, to: want.Memory, set: setPod(PodCgroupConfig{Memory: want.Memory})}
		if err := m.resizeResource(ctx, pod, plan.update, v1.ResourceMemory, limit, podSetting{}); err != nil {
			return err
		}
	}
	if plan.restart || plan.changes(v1.ResourceCPU) {
		if want.CPUQuota == unlimitedSetting {
			want.CPUQuota = cur.CPUQuota // nor a cpu quota
		}
		limit := podSetting{from: cur.CPUQuota, to: want.CPUQuota, set: setPod(PodCgroupConfig{CPUQuota: want.CPUQuota})}
		request := podSetting{from: cur.CPUShares, to: want.CPUShares, set: setPod(PodCgroupConfig{CPUShares: want.CPUShares})}
		return m.resizeResource(ctx, pod, plan.update, v1.ResourceCPU, limit, request)
	}
	return nil
}

// unlimitedSetting is a PodCgroupConfig field's "no limit".
const unlimitedSetting = -1

// checkPodMemoryUsage refuses to set the pod's memory limit at or below what it uses now:
// the kernel would have to reclaim or kill. The resize stays in progress and is retried.
func (m *Manager) checkPodMemoryUsage(pod *v1.Pod, limit int64) error {
	usage, err := m.podCgroups.PodMemoryUsage(pod)
	if err != nil {
		return err
	}
	if usage >= limit {
		return fmt.Errorf("aborting attempt to set pod memory limit less than current memory usage for pod %s", pod.Name)
	}
	return nil
}

// podSetting is one pod cgroup setting a resize changes; set is nil without pod cgroups.
type podSetting struct {
	from, to int64
	set      func() error
}

func (s podSetting) grows() bool   { return s.set != nil && above(s.to, s.from) }
func (s podSetting) shrinks() bool { return s.set != nil && above(s.from, s.to) }

// above says a > b, where -1 (no limit) is above everything.
func above(a, b int64) bool {
	switch {
	case a == b:
		return false
	case a < 0:
		return true
	case b < 0:
		return false
	}
	return a > b
}

// resizeResource resizes one resource: pod settings that grow, the containers, then pod
// settings that shrink (limits grow before requests and shrink after them).
func (m *Manager) resizeResource(ctx context.Context, pod *v1.Pod, updates []*containerUpdate, name v1.ResourceName, limit, request podSetting) error {
	for _, s := range []podSetting{limit, request} {
		if s.grows() {
			if err := s.set(); err != nil {
				return err
			}
		}
	}
	if err := m.updateContainers(ctx, pod, updates, name); err != nil {
		return err
	}
	for _, s := range []podSetting{request, limit} {
		if s.shrinks() {
			if err := s.set(); err != nil {
				return err
			}
		}
	}
	return nil
}

// updateContainers sets resource name on each container whose name changes, decreases first,
// keeping its other resource as in effect, and records what was set.
func (m *Manager) updateContainers(ctx context.Context, pod *v1.Pod, updates []*containerUpdate, name v1.ResourceName) error {
	var todo []*containerUpdate
	for _, u := range updates {
		if delta(u, name) != 0 {
			todo = append(todo, u)
		}
	}
	sort.SliceStable(todo, func(i, j int) bool { return delta(todo[i], name) < 0 && delta(todo[j], name) > 0 })
	for _, u := range todo {
		next := withResource(u.actuated, u.spec.Resources, name)
		c := *u.spec
		c.Resources = next
		res := m.containerResources(pod, &c)
		if err := m.cri.UpdateContainerResources(ctx, u.id, res); err != nil {
			return fmt.Errorf("update %s of container %s: %w", name, c.Name, err)
		}
		klog.V(2).InfoS("Resized container in place", "pod", klog.KObj(pod), "container", c.Name, "resource", name)
		u.actuated = next
		if err := m.actuated.SetActuated(pod.UID, c.Name, next); err != nil {
			return err
		}
	}
	return nil
}

// delta compares a container's wanted amount of name with the one in effect: the limit, or
// the request when the limits are equal.
func delta(u *containerUpdate, name v1.ResourceName) int {
	want, have := amountsOf(&u.spec.Resources), amountsOf(&u.actuated)
	pairs := [][2]int64{{want.memLimit, have.memLimit}, {want.memRequest, have.memRequest}}
	if name == v1.ResourceCPU {
		pairs = [][2]int64{{want.cpuLimit, have.cpuLimit}, {want.cpuRequest, have.cpuRequest}}
	}
	for _, p := range pairs {
		switch {
		case p[0] > p[1]:
			return 1
		case p[0] < p[1]:
			return -1
		}
	}
	return 0
}

// withResource is base with name's request and limit taken from from.
func withResource(base, from v1.ResourceRequirements, name v1.ResourceName) v1.ResourceRequirements {
	out := *base.DeepCopy()
	take := func(dst *v1.ResourceList, src v1.ResourceList) {
		delete(*dst, name)
		if q, ok := src[name]; ok {
			if *dst == nil {
				*dst = v1.ResourceList{}
			}
			(*dst)[name] = q.DeepCopy()
		}
	}
	take(&out.Limits, from.Limits)
	take(&out.Requests, from.Requests)
	return out
}

// changes says whether any in-place update changes name.
func (p resizePlan) changes(name v1.ResourceName) bool {
	for _, u := range p.update {
		if delta(u, name) != 0 {
			return true
		}
	}
	return false
}
