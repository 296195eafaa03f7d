package podsync

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

// pullingRuntime tells when a pod pulls its images ahead of its start.
type pullingRuntime struct {
	*fakeRuntime
	pulls chan string
}

func (r pullingRuntime) PullImages(_ context.Context, pod *v1.Pod, _ *container.PodStatus) {
	r.pulls <- pod.Name
}

func TestPodWaitingForAStartSlotPullsMeanwhile(t *testing.T) {
	rt := pullingRuntime{fakeRuntime: &fakeRuntime{}, pulls: make(chan string, 1)}
	s := newTestSyncer(t, rt)
	s.starts = make(chan struct{}, 1)

	// A free slot: the start pulls in its own course, nothing ahead.
	if _, err := s.SyncPod(context.Background(), testPod()); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-rt.pulls:
		t.Fatalf("%s pulled ahead though a slot was free", name)
	default:
	}

	s.starts <- struct{}{} // another pod is starting
	second := testPod()
	second.Name, second.UID = "second", "uid-2"
	rt.fakeRuntime.running = false
	done := make(chan error, 1)
	go func() {
		_, err := s.SyncPod(context.Background(), second)
		done <- err
	}()
	select {
	case name := <-rt.pulls:
		if name != "second" {
			t.Fatalf("pulled ahead for %q", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a pod waiting for a start slot did not pull its images")
	}
	select {
	case err := <-done:
		t.Fatalf("the pod started while every slot was taken (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	<-s.starts // the other pod's start is done
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rt.synced != 2 {
		t.Errorf("synced %d times, want 2", rt.synced)
	}
}
