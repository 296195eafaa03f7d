package gc

import (
	"context"
	"sort"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// evictSandboxes removes sandboxes that are not ready and hold no container any more (after
// evictContainers): all such sandboxes of a pod whose runtime objects all go, and for other
// pods all but the newest sandbox, which stays whatever its state as the pod's current one.
func (p *pass) evictSandboxes(ctx context.Context, pods []*container.RunningPod) {
	for _, rp := range pods {
		sandboxes := append([]*container.SandboxStatus(nil), rp.Sandboxes...)
		sort.SliceStable(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt.After(sandboxes[j].CreatedAt) })
		if !p.removeAll(rp.UID) && len(sandboxes) > 0 {
			sandboxes = sandboxes[1:]
		}
		inUse := p.sandboxesWithContainers(rp)
		for _, sb := range sandboxes {
			if sb.Ready || inUse[sb.ID] {
				continue
			}
			if err := p.g.opts.Runtime.RemoveSandbox(ctx, sb.ID); err != nil {
				klog.ErrorS(err, "Failed to remove a pod sandbox", "pod", klog.KRef(rp.Namespace, rp.Name), "podUID", rp.UID, "sandbox", sb.ID)
				continue
			}
			klog.V(2).InfoS("Removed pod sandbox", "pod", klog.KRef(rp.Namespace, rp.Name), "podUID", rp.UID, "sandbox", sb.ID)
			p.removedSandboxes[sb.ID] = true
		}
	}
}

// sandboxesWithContainers is the set of the pod's sandboxes that still hold a container.
func (p *pass) sandboxesWithContainers(rp *container.RunningPod) map[string]bool {
	out := map[string]bool{}
	for _, c := range rp.Containers {
		if !p.removedContainers[c.ID] {
			out[c.SandboxID] = true
		}
	}
	return out
}
