package syncloop

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
)

// A pod is active while a worker syncs it and its recorded phase is not final: not once it is
// being terminated, not once it finished, not while it has no worker (refused).
func TestActivePodsAreSyncingAndNotFinished(t *testing.T) {
	pods := pod.NewManager()
	for _, uid := range []types.UID{"running", "finished", "terminating", "refused"} {
		pods.Set(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid}})
	}
	workers := &fakeWorkers{states: map[types.UID]podworkers.State{
		"running": podworkers.Syncing, "finished": podworkers.Syncing, "terminating": podworkers.Terminating,
	}}
	phases := map[types.UID]v1.PodPhase{"running": v1.PodRunning, "finished": v1.PodSucceeded}
	status := func(uid types.UID) (v1.PodStatus, bool) {
		p, ok := phases[uid]
		return v1.PodStatus{Phase: p}, ok
	}
	names := func(list []*v1.Pod) []string {
		var out []string
		for _, p := range list {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(ActivePods{Pods: pods, Workers: workers, Status: status}.List()); !slices.Equal(got, []string{"running"}) {
		t.Errorf("active %v, want [running]", got)
	}
	// Without statuses (the loop's own tests), the worker's state alone decides.
	if got := names(ActivePods{Pods: pods, Workers: workers}.List()); !slices.Equal(got, []string{"finished", "running"}) {
		t.Errorf("active without statuses %v, want [finished running]", got)
	}
}
