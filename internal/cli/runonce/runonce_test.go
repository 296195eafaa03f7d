package runonce

import (
	"context"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/source"
)

// fakeNode records a phase per pod on its first sync, as a sync of that pod would.
type fakeNode struct {
	mu       sync.Mutex
	phases   map[types.UID]v1.PodPhase // what each pod reaches when synced
	statuses map[types.UID]v1.PodStatus
	synced   map[types.UID]int
}

func (f *fakeNode) sync(_ context.Context, pod *v1.Pod) (podworkers.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced[pod.UID]++
	phase := f.phases[pod.UID]
	f.statuses[pod.UID] = v1.PodStatus{Phase: phase, PodIP: "10.0.0.1"}
	return podworkers.Outcome{Terminal: phase == v1.PodSucceeded || phase == v1.PodFailed}, nil
}

func (f *fakeNode) status(uid types.UID) (v1.PodStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[uid]
	return st, ok
}

func testPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)}}
}

func run(t *testing.T, phases map[types.UID]v1.PodPhase, pods ...*v1.Pod) (*fakeNode, string, error) {
	t.Helper()
	node := &fakeNode{phases: phases, statuses: map[types.UID]v1.PodStatus{}, synced: map[types.UID]int{}}
	updates := make(chan source.PodUpdate, 2)
	updates <- source.PodUpdate{Op: source.ADD, Pods: pods}
	updates <- source.PodUpdate{Op: source.UPDATE, Pods: pods} // not a new pod: no second start
	out := &strings.Builder{}
	err := Run(context.Background(), Deps{
		Updates: updates, SourcesSeen: func() bool { return true },
		SyncPod: node.sync, Status: node.status, Out: out,
	})
	return node, out.String(), err
}

func TestRunStartsEachPodOnceAndPrintsStatus(t *testing.T) {
	node, out, err := run(t, map[types.UID]v1.PodPhase{"web": v1.PodRunning, "job": v1.PodSucceeded},
		testPod("web"), testPod("job"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if node.synced["web"] != 1 || node.synced["job"] != 1 {
		t.Errorf("syncs = %v, want one per pod", node.synced)
	}
	for _, want := range []string{"NAMESPACE", "web", "Running", "job", "Succeeded", "10.0.0.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
}

func TestRunFailsWhenAPodFails(t *testing.T) {
	_, out, err := run(t, map[types.UID]v1.PodPhase{"ok": v1.PodRunning, "bad": v1.PodFailed},
		testPod("ok"), testPod("bad"))
	if err == nil || !strings.Contains(err.Error(), "1 of 2 pods") {
		t.Fatalf("Run = %v, want 1 of 2 pods failing", err)
	}
	if !strings.Contains(out, "Failed") {
		t.Errorf("status table lacks the failed pod:\n%s", out)
	}
}

func TestContainerSummary(t *testing.T) {
	st := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		{Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3}}},
		{Name: "c", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
		{Name: "d"},
	}}
	if got, want := containerSummary(st), "a=running b=exited(3) c=ImagePullBackOff d=waiting"; got != want {
		t.Errorf("containerSummary = %q, want %q", got, want)
	}
}
