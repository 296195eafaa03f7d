package podsync

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// A removed pod leaves nothing in the syncer's per-pod state: its status, its cached runtime
// status, its containers' waiting reasons and crash-loop back-off; an orphan's back-off (no
// spec to name its keys) goes once it is stale.
func TestRemovedPodLeavesNoPerPodState(t *testing.T) {
	rt := &fakeRuntime{}
	root := t.TempDir()
	clock := testingclock.NewFakeClock(time.Now())
	statuses := status.NewManager(nil)
	s := New(Deps{
		Runtime: rt, Statuses: statuses, Backoff: flowcontrol.NewFakeBackOff(10*time.Second, time.Minute, clock),
		RootDir: root, Volumes: &fakeVolumes{root: root}, Release: Release{Books: []Releaser{statuses}},
	})
	pod := testPod()
	if _, err := s.SyncPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	s.setWaiting(pod.UID, map[string]container.WaitingReason{"app": {Reason: "CrashLoopBackOff"}})
	key := BackoffKey(pod, &pod.Spec.Containers[0])
	s.Backoff.Next(key, clock.Now())
	const orphanKey = "ns_orphan_uid-2_app_busybox"
	s.Backoff.Next(orphanKey, clock.Now())

	clock.Step(3 * time.Minute) // the orphan's entry is stale (twice the maximum back-off)
	if err := s.SyncTerminatedPod(context.Background(), pod, pod.UID, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := statuses.Get(pod.UID); ok {
		t.Error("status kept")
	}
	if _, ok := s.Cache.Get(pod.UID); ok {
		t.Error("runtime status kept in the cache")
	}
	if w := s.getWaiting(pod.UID); w != nil {
		t.Errorf("waiting reasons kept: %v", w)
	}
	for _, k := range []string{key, orphanKey} {
		if d := s.Backoff.Get(k); d != 0 {
			t.Errorf("crash-loop back-off %q kept: %v", k, d)
		}
	}
}
