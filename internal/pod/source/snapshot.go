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
	// byVersion: the pods come from the API server, where an unchanged resourceVersion means an
	// unchanged object, so comparing versions stands in for comparing whole pods.
	byVersion bool
}

// send delivers pods unless they equal the last snapshot; it reports whether it sent.
func (s *snapshots) send(ctx context.Context, pods []*v1.Pod) bool {
	if s.sent && s.same(pods, s.last) {
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

func (s *snapshots) same(a, b []*v1.Pod) bool {
	if !s.byVersion {
		return equality.Semantic.DeepEqual(a, b)
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameVersion(a[i], b[i]) && !(a[i].ResourceVersion == "" && equality.Semantic.DeepEqual(a[i], b[i])) {
			return false
		}
	}
	return true
}

// sameVersion: a and b are one API object at one resourceVersion (a pod without a version,
// which only a fake API server serves, is never taken as unchanged).
func sameVersion(a, b *v1.Pod) bool {
	return a.UID == b.UID && a.ResourceVersion != "" && a.ResourceVersion == b.ResourceVersion
}
