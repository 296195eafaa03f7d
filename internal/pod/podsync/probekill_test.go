package podsync

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/prober"
	"github.com/nodelet/nodelet/internal/testutil"
)

// While a liveness probe kills a container of the pod (its preStop hook can take minutes), the
// pod's sync starts and stops nothing, as upstream, whose pod sync does that kill itself; the
// kill's end resyncs the pod.
func TestPodSyncWaitsForAProbeKill(t *testing.T) {
	rt := &fakeRuntime{}
	s := newTestSyncer(t, rt)
	killing, release := make(chan struct{}), make(chan struct{})
	s.Prober = prober.New(prober.Deps{
		Exec: func(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
			return nil, nil, 1, nil // the liveness probe fails
		},
		Kill: func(context.Context, *v1.Pod, string, int64, string) error {
			close(killing)
			<-release // the container's preStop hook runs
			return nil
		},
		Status: func(uid types.UID) (v1.PodStatus, bool) { return s.Statuses.Get(uid) },
	})
	testutil.Start(t, s.Prober.Run)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before Run's own cleanup waits for the worker in Kill
	pod := testPod()
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"false"}}},
		PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 1,
	}

	if _, err := s.SyncPod(context.Background(), pod); err != nil || rt.synced != 1 {
		t.Fatalf("first sync: err %v, runtime synced %d times", err, rt.synced)
	}
	select {
	case <-killing:
	case <-time.After(10 * time.Second):
		t.Fatal("the failing liveness probe did not kill the container")
	}
	if _, err := s.SyncPod(context.Background(), pod); err != nil || rt.synced != 1 {
		t.Fatalf("sync during the probe's kill: err %v, runtime synced %d times, want it held", err, rt.synced)
	}

	free()
	select {
	case uid := <-s.Prober.Updates():
		if uid != pod.UID {
			t.Fatalf("resync asked for %s", uid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kill's end did not ask for a resync")
	}
	if _, err := s.SyncPod(context.Background(), pod); err != nil || rt.synced != 2 {
		t.Fatalf("sync after the kill: err %v, runtime synced %d times, want 2", err, rt.synced)
	}
}
