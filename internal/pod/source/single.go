package source

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// ReadManifest decodes, names, defaults and validates one pod manifest exactly as the static
// pod directory does for a file at location on node nodeName: the same pod (name with the node
// suffix, UID, annotations) or the same error that file would be logged with.
func ReadManifest(data []byte, location, nodeName string) (*v1.Pod, error) {
	return newStaticPods(nodeName, podutil.FileSource).fromManifest(data, location)
}

// IgnoredManifestName reports whether the static pod directory skips a file of this name
// (hidden files, editors' swap and backup files).
func IgnoredManifestName(name string) bool { return ignoredName(name) }

// SinglePod is a source of exactly one pod, for running one manifest in the foreground
// (`nodelet run --wait`). It offers the pod at once; Delete then offers it as being deleted
// (the sync loop kills it gracefully and keeps it known, as for an API pod being deleted) and
// Remove offers nothing (the pod is removed).
type SinglePod struct {
	pod *v1.Pod
	out snapshots

	mu   sync.Mutex
	next chan []*v1.Pod // the newest snapshot not sent yet; capacity 1, so the newest wins
}

// NewSinglePod returns a source for pod (as ReadManifest builds it) sending to out.
func NewSinglePod(pod *v1.Pod, out chan<- []*v1.Pod) *SinglePod {
	return &SinglePod{pod: pod, out: snapshots{out: out}, next: make(chan []*v1.Pod, 1)}
}

// Run sends the pod, then each later change, until ctx ends.
func (s *SinglePod) Run(ctx context.Context) error {
	s.out.send(ctx, []*v1.Pod{s.pod})
	for {
		select {
		case <-ctx.Done():
			return nil
		case pods := <-s.next:
			s.out.send(ctx, pods)
		}
	}
}

// Delete asks for the pod to be killed with its grace period (preStop hooks first), as a
// graceful deletion does; it stays known until Remove.
func (s *SinglePod) Delete(now time.Time) {
	pod := s.pod.DeepCopy()
	deleted := metav1.NewTime(now)
	pod.DeletionTimestamp = &deleted
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	pod.DeletionGracePeriodSeconds = &grace
	s.offer([]*v1.Pod{pod})
}

// Remove asks for the pod to be killed (if it still runs) and removed from the runtime.
func (s *SinglePod) Remove() { s.offer([]*v1.Pod{}) }

// offer replaces any snapshot not sent yet with pods.
func (s *SinglePod) offer(pods []*v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.next:
	default:
	}
	s.next <- pods
}
