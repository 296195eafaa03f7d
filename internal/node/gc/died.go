package gc

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// diedQueueLen bounds the deaths waiting to be trimmed; beyond it a death is dropped and the
// next periodic pass catches up.
const diedQueueLen = 50

// death is one container that the PLEG saw die.
type death struct {
	uid         types.UID
	containerID string
}

// ContainerDied asks for the dead instances of the container that just died to be trimmed to
// the policy at once, as the kubelet does on every ContainerDied event: waiting for the next
// periodic pass lets a crash-looping container pile up a dead instance per restart. It never
// blocks (the sync loop calls it); the work happens in Run.
func (g *ContainerGC) ContainerDied(uid types.UID, containerID string) {
	select {
	case g.died <- death{uid, containerID}:
	default:
		klog.V(4).InfoS("Container GC queue full; the periodic pass will trim", "podUID", uid, "containerID", containerID)
	}
}

// trimDeaths serves ContainerDied until ctx ends.
func (g *ContainerGC) trimDeaths(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-g.died:
			if err := g.TrimDeadInstances(ctx, d.uid, d.containerID); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Failed to trim the dead instances of a container", "podUID", d.uid, "containerID", d.containerID)
			}
		}
	}
}

// TrimDeadInstances applies MaxPerPodContainer and MinAge to the container of pod uid that
// containerID is an instance of; the newest dead instance always stays (see evictContainers).
// A container or pod that is no longer listed, or another node's, is left alone.
func (g *ContainerGC) TrimDeadInstances(ctx context.Context, uid types.UID, containerID string) error {
	keep := g.opts.Policy.MaxPerPodContainer
	if keep < 0 {
		return nil // no limit
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	pods, err := g.opts.Runtime.GetPods(ctx, true)
	if err != nil {
		return err
	}
	p := &pass{g: g, pods: pods, removedContainers: map[string]bool{}, removedSandboxes: map[string]bool{}}
	for _, rp := range p.ourPods() {
		if rp.UID != uid {
			continue
		}
		name, ok := containerName(rp, containerID)
		if !ok {
			return nil
		}
		for _, u := range p.evictableUnits([]*container.RunningPod{rp}) {
			if u.name == name {
				p.keepNewest(ctx, []*unit{u}, keep)
			}
		}
	}
	return nil
}

// containerName is the name of the pod's container that id is an instance of.
func containerName(rp *container.RunningPod, id string) (string, bool) {
	for _, c := range rp.Containers {
		if c.ID == id {
			return c.Name, true
		}
	}
	return "", false
}
