package source

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// snapshots hands a source's complete pod list to the merger, skipping repeats of the last one.
type snapshots struct {
	out  chan<- []*v1.Pod
	last []*v1.Pod
	sent bool // at least one snapshot went out
}

// send delivers pods unless they equal the last snapshot; it reports whether it sent.
func (s *snapshots) send(ctx context.Context, pods []*v1.Pod) bool {
	if s.sent && equality.Semantic.DeepEqual(pods, s.last) {
		return false
	}
	select {
	case s.out <- pods:
		s.last, s.sent = pods, true
		return true
	case <-ctx.Done():
		return false
	}
}
