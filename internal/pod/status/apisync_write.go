package status

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// work is one attempt on an entry, taken under the lock and done without it.
type work struct {
	pod       *v1.Pod
	status    *v1.PodStatus // nil: nothing (new) to write
	version   uint64
	terminate bool

	cachedUID    types.UID
	cachedStatus *v1.PodStatus
}

// apiTarget is the API object a pod's status goes to.
type apiTarget struct {
	namespace, name string
	uid             types.UID
}

// writeStatus brings the API object's status to w.status, patching only what differs.
func (s *APISyncer) writeStatus(ctx context.Context, w *work) outcome {
	if w.status == nil {
		return done
	}
	target, ok := s.target(w.pod)
	if !ok {
		klog.V(4).InfoS("Static pod has no mirror pod yet; status kept", "pod", klog.KObj(w.pod))
		return pending
	}
	if w.cachedUID != target.uid || w.cachedStatus == nil {
		current, result := s.read(ctx, w.pod, target)
		if result != done {
			return result
		}
		w.cachedUID, w.cachedStatus = target.uid, current
	}
	merged := mergeStatus(*w.cachedStatus, *w.status)
	patch, err := statusPatch(*w.cachedStatus, merged, target.uid)
	if err != nil {
		klog.ErrorS(err, "Cannot build status patch", "pod", klog.KObj(w.pod))
		return failed
	}
	if patch == nil {
		return done
	}
	reqCtx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
	defer cancel()
	updated, err := s.client.CoreV1().Pods(target.namespace).Patch(reqCtx, target.name,
		types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return s.patchFailed(w.pod, target, err)
	}
	klog.V(3).InfoS("Patched pod status", "pod", klog.KObj(w.pod), "target", klog.KRef(target.namespace, target.name),
		"phase", updated.Status.Phase, "patch", string(patch))
	w.cachedUID, w.cachedStatus = updated.UID, updated.Status.DeepCopy()
	return done
}

// target finds where pod's status goes: the pod itself, or a static pod's mirror.
func (s *APISyncer) target(pod *v1.Pod) (apiTarget, bool) {
	if !podutil.IsStatic(pod) {
		return apiTarget{pod.Namespace, pod.Name, pod.UID}, true
	}
	if s.mirrorOf == nil {
		return apiTarget{}, false
	}
	mirror, ok := s.mirrorOf(pod)
	if !ok || mirror == nil {
		return apiTarget{}, false
	}
	return apiTarget{mirror.Namespace, mirror.Name, mirror.UID}, true
}

// read fetches target's current status. A missing target, or one with another UID (the pod
// was deleted and recreated under the same name), means our pod is gone; for a static pod it
// only means its mirror must be recreated first.
func (s *APISyncer) read(ctx context.Context, pod *v1.Pod, target apiTarget) (*v1.PodStatus, outcome) {
	reqCtx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
	defer cancel()
	current, err := s.client.CoreV1().Pods(target.namespace).Get(reqCtx, target.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, s.targetGone(pod, target)
	case err != nil:
		klog.ErrorS(err, "Cannot read pod for its status update", "pod", klog.KObj(pod))
		return nil, failed
	case current.UID != target.uid:
		return nil, s.targetGone(pod, target)
	}
	return current.Status.DeepCopy(), done
}

func (s *APISyncer) targetGone(pod *v1.Pod, target apiTarget) outcome {
	if podutil.IsStatic(pod) {
		klog.V(3).InfoS("Mirror pod gone; status waits for a new one", "pod", klog.KObj(pod), "mirrorUID", target.uid)
		return pending
	}
	klog.V(3).InfoS("Pod gone from the API; forgetting its status", "pod", klog.KObj(pod), "uid", target.uid)
	return gone
}

// patchFailed classifies a failed status patch.
func (s *APISyncer) patchFailed(pod *v1.Pod, target apiTarget, err error) outcome {
	switch {
	case apierrors.IsNotFound(err):
		return s.targetGone(pod, target)
	case apierrors.IsConflict(err), apierrors.IsInvalid(err):
		// Our picture of the API object is stale (it may even be another object with the same
		// name, which the UID precondition refused): read it again.
		klog.V(2).InfoS("Status patch refused; re-reading the pod", "pod", klog.KObj(pod), "err", err)
		return refetch
	default:
		klog.ErrorS(err, "Cannot patch pod status; will retry", "pod", klog.KObj(pod))
		return failed
	}
}

// deletePod completes the graceful deletion of an API pod whose containers are all stopped.
// The UID precondition makes sure a recreated pod with the same name is never deleted.
func (s *APISyncer) deletePod(ctx context.Context, pod *v1.Pod) outcome {
	grace := int64(0)
	uid := pod.UID
	opts := metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &uid}}
	reqCtx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
	defer cancel()
	err := s.client.CoreV1().Pods(pod.Namespace).Delete(reqCtx, pod.Name, opts)
	switch {
	case err == nil:
		klog.V(2).InfoS("Pod deleted from the API", "pod", klog.KObj(pod), "uid", uid)
		return done
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or the name now belongs to another pod.
		return gone
	default:
		klog.ErrorS(err, "Cannot delete terminated pod; will retry", "pod", klog.KObj(pod))
		return failed
	}
}

// ownedConditions are the pod conditions nodelet decides; all others (PodScheduled from the
// scheduler, DisruptionTarget, readiness gates, ...) belong to someone else.
var ownedConditions = map[v1.PodConditionType]bool{
	v1.PodReadyToStartContainers: true,
	v1.PodInitialized:            true,
	v1.ContainersReady:           true,
	v1.PodReady:                  true,
	v1.PodResizePending:          true,
	v1.PodResizeInProgress:       true,
}

// mergeStatus returns the status the API object should have: nodelet's fields from desired,
// everything else (conditions nodelet does not own, nominatedNodeName, resource claim statuses,
// ...) as the API has it. A terminal phase in the API is never undone, and the API's start time
// and QoS class, once set, stay.
func mergeStatus(api, desired v1.PodStatus) v1.PodStatus {
	out := *api.DeepCopy()
	d := desired.DeepCopy()
	out.Phase, out.Reason, out.Message = d.Phase, d.Reason, d.Message
	out.HostIP, out.HostIPs, out.PodIP, out.PodIPs = d.HostIP, d.HostIPs, d.PodIP, d.PodIPs
	out.InitContainerStatuses = d.InitContainerStatuses
	out.ContainerStatuses = d.ContainerStatuses
	out.EphemeralContainerStatuses = d.EphemeralContainerStatuses
	if out.StartTime == nil {
		out.StartTime = d.StartTime
	}
	if out.QOSClass == "" {
		out.QOSClass = d.QOSClass
	}
	if IsTerminal(api.Phase) {
		out.Phase = api.Phase
	}
	out.Conditions = mergeConditions(api.Conditions, d.Conditions)
	return out
}

// mergeConditions keeps the API's order: owned conditions are replaced in place by nodelet's
// (or dropped if nodelet has none of that type), others are kept; nodelet's remaining owned
// conditions, and any other condition the API lacks, are appended.
func mergeConditions(api, desired []v1.PodCondition) []v1.PodCondition {
	byType := make(map[v1.PodConditionType]v1.PodCondition, len(desired))
	for _, c := range desired {
		byType[c.Type] = c
	}
	out := make([]v1.PodCondition, 0, len(api)+len(desired))
	placed := map[v1.PodConditionType]bool{}
	for _, c := range api {
		placed[c.Type] = true
		if !ownedConditions[c.Type] {
			out = append(out, c)
		} else if mine, ok := byType[c.Type]; ok {
			out = append(out, mine)
		}
	}
	for _, c := range desired {
		if !placed[c.Type] {
			out = append(out, c)
			placed[c.Type] = true
		}
	}
	if len(out) == 0 {
		return api
	}
	return out
}

// statusPatch returns the strategic-merge patch turning current into desired, with the UID
// precondition, or nil when there is nothing to change. Comparing serialized forms means time
// stamps the API stores at second precision do not count as changes.
func statusPatch(current, desired v1.PodStatus, uid types.UID) ([]byte, error) {
	oldJSON, err := json.Marshal(map[string]any{"status": current})
	if err != nil {
		return nil, err
	}
	newJSON, err := json.Marshal(map[string]any{"status": desired})
	if err != nil {
		return nil, err
	}
	diff, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("computing status patch: %w", err)
	}
	var patch map[string]any
	if err := json.Unmarshal(diff, &patch); err != nil {
		return nil, err
	}
	if len(patch) == 0 {
		return nil, nil
	}
	patch["metadata"] = map[string]any{"uid": uid}
	return json.Marshal(patch)
}
