package app

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/node/eviction"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/pod/syncloop"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// startEviction makes the eviction manager (n.eviction: admission, the node status and the
// node page read its pressure) and starts it. It always runs (with no threshold too): its 10 s
// read of the summary is also the CPU housekeeping sample, so every /stats/summary answer
// carries usageNanoCores however rarely it is asked.
func (n *agent) startEviction(workers *podworkers.PodWorkers) error {
	kc := n.cfg.Kubelet
	deps := eviction.Deps{
		Summary:    n.summaryProvider(),
		ActivePods: n.activePods,
		Evict:      func(p *v1.Pod, grace int64, why eviction.Eviction) { n.evictPod(workers, p, grace, why) },
		Critical:   podutil.IsCritical,
		OnEvict:    metrics.Evicted,
		CleanedUp:  func(p *v1.Pod) bool { return workers.CleanedUp(p.UID) },
	}
	if n.containerGC != nil {
		deps.DiskReclaimers = append(deps.DiskReclaimers, n.containerGC.DeleteAllUnusedContainers)
	}
	if n.imageGC != nil {
		deps.DiskReclaimers = append(deps.DiskReclaimers, n.imageGC.DeleteUnusedImages)
	}
	if kc.KernelMemcgNotification {
		root, pods, err := n.cm.MemoryCgroups()
		if err != nil {
			return fmt.Errorf("kernelMemcgNotification: %w; set it to false", err)
		}
		deps.MemoryCgroups = map[eviction.Signal]string{eviction.MemoryAvailable: root, eviction.AllocatableMemoryAvailable: pods}
	}
	m, err := eviction.New(eviction.Config{
		Hard: kc.EvictionHard, Soft: kc.EvictionSoft, SoftGracePeriod: kc.EvictionSoftGracePeriod,
		MinimumReclaim: kc.EvictionMinimumReclaim, MaxPodGracePeriodSeconds: int64(kc.EvictionMaxPodGracePeriod),
		PressureTransitionPeriod:      kc.EvictionPressureTransitionPeriod.Duration,
		LocalStorageCapacityIsolation: n.cfg.LocalStorageCapacityIsolation,
		PodsAllocatableEnforced:       slices.Contains(kc.EnforceNodeAllocatable, "pods"),
		KernelMemcgNotification:       kc.KernelMemcgNotification,
	}, deps)
	if err != nil {
		return err
	}
	n.eviction = m
	n.comps.start("eviction manager", m.Run)
	return nil
}

// activePods are the pods nodelet runs, as syncloop.ActivePods defines them (from the
// workers' states, made before the workers and everything that reads them).
func (n *agent) activePods() []*v1.Pod {
	return syncloop.ActivePods{Pods: n.pods, Workers: n.workerStates, Status: n.statuses.Get}.List()
}

// evictPod records the pod as Failed/Evicted (for node pressure also with a DisruptionTarget
// condition, as upstream), posts the Evicted event with the manager's annotations and kills
// the pod with the grace period. The terminal phase stays: later syncs keep it (status.Compute).
func (n *agent) evictPod(workers *podworkers.PodWorkers, p *v1.Pod, grace int64, why eviction.Eviction) {
	st, _ := n.statuses.Get(p.UID)
	st = *st.DeepCopy()
	status.SetTerminal(&st, v1.PodFailed, eviction.ReasonEvicted, why.Message)
	if why.NodePressure {
		st.Conditions = append(st.Conditions, v1.PodCondition{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
			Message: why.Message, LastTransitionTime: metav1.Now(),
		})
	}
	n.statuses.Set(p, st)
	if n.recorder != nil {
		n.recorder.AnnotatedEventf(p, why.Annotations, v1.EventTypeWarning, eviction.ReasonEvicted, "%s", why.Message)
	}
	workers.UpdatePod(podworkers.UpdateOptions{Type: podworkers.Kill, Pod: p, Kill: &podworkers.KillOptions{GracePeriod: &grace}})
	klog.InfoS("Pod evicted", "pod", klog.KObj(p), "gracePeriod", grace)
}
