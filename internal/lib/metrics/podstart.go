package metrics

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodStartTracker records kubelet_pod_start_duration_seconds (first seen by nodelet → running)
// and kubelet_pod_start_sli_duration_seconds (created → running, less the time spent pulling
// images) once per pod. The package functions PodObserved, ImagePullStarted,
// ImagePullFinished, PodRunning and ForgetPod use a process-wide tracker.
type PodStartTracker struct {
	now     func() time.Time
	started time.Time // pods created before this were not watched from the start: no SLI

	mu   sync.Mutex
	pods map[types.UID]*podStart
}

type podStart struct {
	firstSeen           time.Time
	firstPull, lastPull time.Time
	recorded            bool
}

// NewPodStartTracker returns a tracker reading time from now (time.Now when nil).
func NewPodStartTracker(now func() time.Time) *PodStartTracker {
	if now == nil {
		now = time.Now
	}
	return &PodStartTracker{now: now, started: now(), pods: map[types.UID]*podStart{}}
}

// PodObserved notes when nodelet first saw the pod; later calls change nothing.
func (t *PodStartTracker) PodObserved(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.pods[uid]; !ok {
		t.pods[uid] = &podStart{firstSeen: t.now()}
	}
}

// ImagePullStarted and ImagePullFinished bracket an image pull for the pod; the span from the
// first pull's start to the last pull's end is left out of the SLI.
func (t *PodStartTracker) ImagePullStarted(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.pods[uid]; ok && !s.recorded && s.firstPull.IsZero() {
		s.firstPull = t.now()
	}
}

func (t *PodStartTracker) ImagePullFinished(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.pods[uid]; ok && !s.recorded && !s.firstPull.IsZero() {
		s.lastPull = t.now()
	}
}

// PodRunning records the pod's start once, when its status first shows every container
// started. A pod never observed counts in neither histogram; one created before the tracker
// (adopted at a restart) only in the first.
func (t *PodStartTracker) PodRunning(pod *v1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.pods[pod.UID]
	if !ok || s.recorded {
		return
	}
	s.recorded = true
	now := t.now()
	podStartDuration.Observe(now.Sub(s.firstSeen).Seconds())
	created := pod.CreationTimestamp.Time
	if created.IsZero() || created.Before(t.started) {
		return
	}
	sli := now.Sub(created)
	if s.lastPull.After(s.firstPull) {
		sli -= s.lastPull.Sub(s.firstPull)
	}
	podStartSLIDuration.Observe(sli.Seconds())
}

// ForgetPod drops the pod's entry (when it is removed).
func (t *PodStartTracker) ForgetPod(uid types.UID) {
	t.mu.Lock()
	delete(t.pods, uid)
	t.mu.Unlock()
}

var podStarts = NewPodStartTracker(nil)

// PodObserved, ImagePullStarted, ImagePullFinished, PodRunning and ForgetPod report to the
// process-wide PodStartTracker.
func PodObserved(uid types.UID)       { podStarts.PodObserved(uid) }
func ImagePullStarted(uid types.UID)  { podStarts.ImagePullStarted(uid) }
func ImagePullFinished(uid types.UID) { podStarts.ImagePullFinished(uid) }
func PodRunning(pod *v1.Pod)          { podStarts.PodRunning(pod) }
func ForgetPod(uid types.UID)         { podStarts.ForgetPod(uid) }

// ObservePodStatus calls PodRunning once status shows every app container running (the
// upstream SLI's "all its containers are reported as started").
func ObservePodStatus(pod *v1.Pod, status *v1.PodStatus) {
	if status.Phase != v1.PodRunning || len(status.ContainerStatuses) < len(pod.Spec.Containers) {
		return
	}
	for _, cs := range status.ContainerStatuses {
		if cs.State.Running == nil {
			return
		}
	}
	PodRunning(pod)
}

// ContainerType names a container of pod for kubelet_started_containers_total.
func ContainerType(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return ContainerTypeInit
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return ContainerTypeEphemeral
		}
	}
	return ContainerTypeContainer
}
