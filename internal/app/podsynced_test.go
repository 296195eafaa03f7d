package app

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod"
	"github.com/nodelet/nodelet/internal/pod/podworkers"
	"github.com/nodelet/nodelet/internal/pod/source"
	"github.com/nodelet/nodelet/internal/pod/syncloop"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
	"github.com/nodelet/nodelet/internal/runtime/container"
	"github.com/nodelet/nodelet/internal/runtime/pleg"
	"github.com/nodelet/nodelet/internal/testutil"
)

// idleWorkers accept every pod and run none.
type idleWorkers struct{}

func (idleWorkers) UpdatePod(podworkers.UpdateOptions)       {}
func (idleWorkers) State(types.UID) (podworkers.State, bool) { return 0, false }
func (idleWorkers) Known() map[types.UID]podworkers.State    { return nil }
func (idleWorkers) FinishedAt(types.UID) (time.Time, bool)   { return time.Time{}, false }

// heldAdmitter admits every pod once release is closed.
type heldAdmitter struct{ release chan struct{} }

func (a heldAdmitter) Admit(*v1.Pod, []*v1.Pod) (bool, string, string) {
	<-a.release
	return true, "", ""
}
func (heldAdmitter) Reject(*v1.Pod, string, string) {}

// The pods of the sources' first snapshots are synced once the loop has admitted them, not
// when the merger has merely seen the snapshot: what pod-resources List and the device
// manager wait for after a restart.
func TestPodsSyncedOnceTheLoopHandledTheFirstSnapshots(t *testing.T) {
	merger := source.NewMerger()
	n := &agent{merger: merger, sources: []string{podutil.APISource}, synced: syncloop.NewSynced(merger, podutil.APISource)}
	pods := pod.NewManager()
	admitter := heldAdmitter{release: make(chan struct{})}
	loop := syncloop.New(syncloop.Config{
		Updates: n.merger.Updates(), Events: make(chan pleg.Event),
		RunningPods:  func() ([]*container.RunningPod, time.Time) { return nil, time.Time{} },
		SourcesReady: func() bool { return false }, Synced: n.synced,
		Pods: pods, Workers: idleWorkers{}, Queue: syncloop.NewQueue(), Admit: admitter,
	})
	testutil.Start(t, n.merger.Run)
	testutil.Start(t, loop.Run)
	synced := n.synced.Ready
	if synced() {
		t.Fatal("synced before the source sent anything")
	}
	running := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web",
		Annotations: map[string]string{"kubernetes.io/config.source": podutil.APISource}}}
	n.merger.Channel(podutil.APISource) <- []*v1.Pod{running}
	testutil.Eventually(t, "the API source seen", func() bool { return n.merger.SeenAllSources(n.sources...) })
	time.Sleep(50 * time.Millisecond)
	if synced() {
		t.Fatal("synced while the first snapshot's pod is still being admitted")
	}
	close(admitter.release)
	testutil.Eventually(t, "pods synced", synced)
	select {
	case <-n.synced.Done():
	default:
		t.Error("ready but its channel is not closed")
	}
	if !loop.Ready() {
		t.Error("the loop does not report itself ready")
	}
	if _, ok := pods.Get("uid-web"); !ok {
		t.Error("synced but the pod is not in the pod manager")
	}
}
