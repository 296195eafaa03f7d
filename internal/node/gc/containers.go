package gc

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// unit is the dead instances of one container of one pod, newest first: the policy's
// MaxPerPodContainer counts per unit.
type unit struct {
	uid       types.UID
	name      string
	pod       *container.RunningPod
	instances []*container.ContainerStatus
}

// evictContainers applies the policy to the dead containers of pods:
//   - every instance of a pod whose runtime objects all go is removed;
//   - each other unit keeps its newest MaxPerPodContainer instances;
//   - then the node keeps at most MaxContainers, first by evening out the units, then oldest
//     first across all of them.
//
// The newest dead instance of a pod that still exists is always kept, whatever the limits: it
// carries the container's restart count (a new instance counts on from it), its last state
// and its `kubectl logs --previous`, and for a finished pod it is what says that it ran.
func (p *pass) evictContainers(ctx context.Context, pods []*container.RunningPod) {
	policy := p.g.opts.Policy
	units := p.evictableUnits(pods)
	kept := units[:0]
	for _, u := range units {
		if p.removeAll(u.uid) {
			p.removeInstances(ctx, u, u.instances)
			continue
		}
		kept = append(kept, u)
	}
	units = kept
	if policy.MaxPerPodContainer >= 0 {
		p.keepNewest(ctx, units, policy.MaxPerPodContainer)
	}
	if policy.MaxContainers < 0 || count(units) <= policy.MaxContainers {
		return
	}
	if len(units) > 0 {
		p.keepNewest(ctx, units, policy.MaxContainers/len(units))
	}
	p.removeOldestAcross(ctx, units, count(units)-policy.MaxContainers)
}

// evictableUnits groups the containers that are not running and older than MinAge.
func (p *pass) evictableUnits(pods []*container.RunningPod) []*unit {
	cutoff := p.g.opts.Clock.Now().Add(-p.g.opts.Policy.MinAge)
	var units []*unit
	for _, rp := range pods {
		byName := map[string]*unit{}
		for _, c := range rp.Containers {
			if c.State == container.StateRunning || c.CreatedAt.After(cutoff) {
				continue
			}
			u := byName[c.Name]
			if u == nil {
				u = &unit{uid: rp.UID, name: c.Name, pod: rp}
				byName[c.Name] = u
				units = append(units, u)
			}
			u.instances = append(u.instances, c)
		}
	}
	for _, u := range units {
		sort.SliceStable(u.instances, func(i, j int) bool {
			return u.instances[i].CreatedAt.After(u.instances[j].CreatedAt)
		})
	}
	return units
}

// keepNewest trims every unit to its newest n instances (at least one, see evictContainers).
func (p *pass) keepNewest(ctx context.Context, units []*unit, n int) {
	n = max(n, 1)
	for _, u := range units {
		if len(u.instances) > n {
			failed := p.removeInstances(ctx, u, u.instances[n:])
			u.instances = append(u.instances[:n:n], failed...)
		}
	}
}

// removeOldestAcross removes up to n instances, oldest first, from all units, never the
// newest of a unit.
func (p *pass) removeOldestAcross(ctx context.Context, units []*unit, n int) {
	type candidate struct {
		u *unit
		c *container.ContainerStatus
	}
	var all []candidate
	for _, u := range units {
		for _, c := range u.instances[1:] {
			all = append(all, candidate{u, c})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].c.CreatedAt.Before(all[j].c.CreatedAt) })
	for _, cand := range all[:min(n, len(all))] {
		p.removeInstances(ctx, cand.u, []*container.ContainerStatus{cand.c})
	}
}

// removeInstances removes containers of a unit and returns those that could not be removed.
func (p *pass) removeInstances(ctx context.Context, u *unit, instances []*container.ContainerStatus) []*container.ContainerStatus {
	var failed []*container.ContainerStatus
	for _, c := range instances {
		if err := p.g.opts.Runtime.RemoveContainer(ctx, c.ID); err != nil {
			klog.ErrorS(err, "Failed to remove a dead container", "pod", klog.KRef(u.pod.Namespace, u.pod.Name),
				"podUID", u.uid, "container", u.name, "containerID", c.ID)
			failed = append(failed, c)
			continue
		}
		klog.V(2).InfoS("Removed dead container", "pod", klog.KRef(u.pod.Namespace, u.pod.Name),
			"podUID", u.uid, "container", u.name, "containerID", c.ID)
		p.removedContainers[c.ID] = true
	}
	return failed
}

func count(units []*unit) int {
	n := 0
	for _, u := range units {
		n += len(u.instances)
	}
	return n
}
