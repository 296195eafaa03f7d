// Package resize decides in-place pod resizes as the upstream kubelet v1.33 does.
//
// A change of a running pod's container resources (from the API's resize subresource) is
// allocated when it fits the node beside the other pods' allocations, else it waits
// (PodResizePending, reason Deferred or Infeasible) and is tried again at the pod's next sync,
// which room appearing on the node (a pod gone, a resize allocated) brings forward. The runtime
// then actuates the allocation; PodResizeInProgress shows while it differs from what is in effect.
package resize

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/pod/admission"
	"github.com/nodelet/nodelet/internal/pod/allocation"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// Messages of the PodResizePending condition, as upstream words them.
const (
	msgStatic   = "In-place resize of static-pods is not supported"
	msgCapacity = "Node didn't have enough capacity: %s, requested: %d, capacity: %d"
)

// Resizer holds the resize decisions and conditions of every pod. Its methods may be called
// on a nil *Resizer, which resizes nothing (every pod keeps its spec's resources).
type Resizer struct {
	Allocations allocation.Manager
	// Fit checks pod's requests beside others' against allocatable (admission's check).
	Fit func(pod *v1.Pod, others []*v1.Pod) (ok bool, reason, message string)
	// Allocatable is the node's allocatable; nil or empty skips the capacity check.
	Allocatable func() v1.ResourceList
	// ActivePods are the pods admitted and running, as their sources last described them.
	ActivePods func() []*v1.Pod
	// Wake asks for a sync of a pod soon; nil leaves deferred resizes to the periodic sync.
	Wake func(uid types.UID)
	// Backoff is the crash-loop back-off, reset for the containers a resize changes.
	Backoff *flowcontrol.Backoff
	// Pinned says why a pod's resources may not change in place (upstream: a Guaranteed pod
	// alongside a static CPU or memory manager policy), "" when they may; nil: never pinned.
	Pinned func(pod *v1.Pod) string
	// Clock stamps the conditions; nil is the real clock.
	Clock clock.PassiveClock

	decide sync.Mutex // one resize decision at a time, as each counts the others' allocations
	mu     sync.Mutex
	pods   map[types.UID]*podState
}

// podState is what the resizer keeps of one pod.
type podState struct {
	pending    *v1.PodCondition // PodResizePending, nil when none
	inProgress *v1.PodCondition // the last PodResizeInProgress shown
	lastErr    string           // the last actuation error, shown in PodResizeInProgress
	deferred   bool
}

// Allocated returns pod with its allocated resources (pod itself when none differ).
func (r *Resizer) Allocated(pod *v1.Pod) *v1.Pod {
	if r == nil {
		return pod
	}
	out, _ := r.Allocations.AllocatedPod(pod)
	return out
}

// Handle runs at the start of each sync of a running pod: it records a new pod's allocation,
// or decides a pending resize, and returns the pod to run, with its allocated resources.
func (r *Resizer) Handle(pod *v1.Pod) (*v1.Pod, error) {
	if r == nil {
		return pod, nil
	}
	allocated, found := r.Allocations.AllocatedPod(pod)
	if !found {
		// First sync since admission: what it was admitted with is its allocation.
		return pod, r.Allocations.SetAllocated(pod)
	}
	if allocated == pod {
		r.setPending(pod.UID, "", "")
		return pod, nil
	}
	if podutil.IsStatic(pod) {
		r.setPending(pod.UID, v1.PodReasonInfeasible, msgStatic)
		return allocated, nil
	}
	r.decide.Lock()
	defer r.decide.Unlock()
	ok, reason, msg := r.canResize(pod)
	if !ok {
		klog.V(2).InfoS("Pod resize waits", "pod", klog.KObj(pod), "reason", reason, "message", msg)
		r.setPending(pod.UID, reason, msg)
		return allocated, nil
	}
	if err := r.Allocations.SetAllocated(pod); err != nil {
		return allocated, fmt.Errorf("recording the pod's resized allocation: %w", err)
	}
	klog.InfoS("Pod resize allocated", "pod", klog.KObj(pod))
	r.setPending(pod.UID, "", "")
	r.setError(pod.UID, "")
	r.resetBackoff(pod, allocated)
	r.RoomMade() // a resize down frees room for those waiting
	return pod, nil
}

// canResize is upstream's check: infeasible when the pod's requests exceed the node's
// allocatable, deferred when they do not fit beside the other pods' allocations now.
func (r *Resizer) canResize(pod *v1.Pod) (bool, string, string) {
	if r.Pinned != nil {
		if msg := r.Pinned(pod); msg != "" {
			return false, v1.PodReasonInfeasible, msg
		}
	}
	if r.Allocatable != nil {
		if alloc := r.Allocatable(); len(alloc) > 0 {
			want := admission.Requests(pod) // as admission counts it: the sidecar rule
			for _, name := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
				capacity, req := alloc[name], want[name]
				if _, ok := alloc[name]; ok && req.Cmp(capacity) > 0 {
					return false, v1.PodReasonInfeasible, fmt.Sprintf(msgCapacity, name, admission.Amount(name, req), admission.Amount(name, capacity))
				}
			}
		}
	}
	if r.Fit == nil {
		return true, "", ""
	}
	var others []*v1.Pod
	if r.ActivePods != nil {
		for _, p := range r.ActivePods() {
			if p.UID != pod.UID {
				others = append(others, r.Allocated(p))
			}
		}
	}
	if ok, _, msg := r.Fit(pod, others); !ok {
		return false, v1.PodReasonDeferred, msg
	}
	return true, "", ""
}

// Done takes the outcome of the sync's actuation: an error shows in PodResizeInProgress
// until a later attempt succeeds.
func (r *Resizer) Done(pod *v1.Pod, res container.SyncResult) {
	if r == nil || !res.Resized {
		return
	}
	msg := ""
	if res.ResizeErr != nil {
		msg = res.ResizeErr.Error()
	}
	r.setError(pod.UID, msg)
}

// RoomMade wakes the pods whose resize was deferred: room appeared on the node.
func (r *Resizer) RoomMade() {
	if r == nil || r.Wake == nil {
		return
	}
	r.mu.Lock()
	var wake []types.UID
	for uid, s := range r.pods {
		if s.deferred {
			wake = append(wake, uid)
		}
	}
	r.mu.Unlock()
	for _, uid := range wake {
		r.Wake(uid)
	}
}

// Forget drops everything kept for a pod removed for good.
func (r *Resizer) Forget(uid types.UID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.pods, uid)
	r.mu.Unlock()
	if err := r.Allocations.RemovePod(uid); err != nil {
		klog.ErrorS(err, "Could not remove the pod's resource checkpoint entries; they go with the next orphan sweep", "podUID", uid)
	}
	r.RoomMade()
}

// resetBackoff lets the containers the resize changes restart at once, as upstream.
func (r *Resizer) resetBackoff(pod, before *v1.Pod) {
	if r.Backoff == nil {
		return
	}
	reset := func(list, old []v1.Container) {
		for i := range list {
			if i < len(old) && !equality.Semantic.DeepEqual(list[i].Resources, old[i].Resources) {
				r.Backoff.Reset(container.BackoffKey(pod, &list[i]))
			}
		}
	}
	reset(pod.Spec.Containers, before.Spec.Containers)
	reset(pod.Spec.InitContainers, before.Spec.InitContainers)
}

func (r *Resizer) state(uid types.UID) *podState {
	if r.pods == nil {
		r.pods = map[types.UID]*podState{}
	}
	s := r.pods[uid]
	if s == nil {
		s = &podState{}
		r.pods[uid] = s
	}
	return s
}

// setPending sets the PodResizePending condition; an empty reason clears it.
func (r *Resizer) setPending(uid types.UID, reason, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state(uid)
	s.deferred = reason == v1.PodReasonDeferred
	if reason == "" {
		s.pending = nil
		return
	}
	s.pending = updated(s.pending, v1.PodResizePending, reason, msg, r.now())
}

func (r *Resizer) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *Resizer) setError(uid types.UID, msg string) {
	r.mu.Lock()
	r.state(uid).lastErr = msg
	r.mu.Unlock()
}

// Name names the per-pod state: the pod's allocated and actuated resources.
func (r *Resizer) Name() string { return "resource allocation" }

// ReleasePod drops everything kept for a pod removed for good (Forget). A checkpoint entry
// that cannot be removed is logged and left to the sweep (RetainOnly), not retried here.
func (r *Resizer) ReleasePod(uid types.UID) error {
	r.Forget(uid)
	return nil
}

// RetainOnly removes the checkpoint entries of pods keep disowns (gone while nodelet was
// down; those removed while it runs go at once).
func (r *Resizer) RetainOnly(keep func(types.UID) bool) error {
	return r.Allocations.RemoveOrphans(keep)
}
