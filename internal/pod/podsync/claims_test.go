package podsync

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeClaims fails its first unprepare, as a DRA driver that is busy.
type fakeClaims struct {
	calls []types.UID
}

func (f *fakeClaims) UnpreparePod(_ context.Context, uid types.UID) error {
	f.calls = append(f.calls, uid)
	if len(f.calls) == 1 {
		return errors.New("NodeUnprepareResources failed: driver busy")
	}
	return nil
}

// A terminating pod's claims are unprepared once its containers have stopped and before its
// final status, as upstream: a failure fails the sync (the worker retries) and holds the phase.
func TestTerminatingPodUnpreparesItsClaimsBeforeItsFinalStatus(t *testing.T) {
	rt := &initFailedBesideSidecar{}
	s := newTestSyncer(t, rt)
	claims := &fakeClaims{}
	s.Claims = claims
	pod := testPod()
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox"}}
	if err := s.SyncTerminatingPod(context.Background(), pod, nil, nil); err == nil {
		t.Fatal("SyncTerminatingPod succeeded with the unprepare failing")
	}
	if st, _ := s.Statuses.Get(pod.UID); st.Phase == v1.PodFailed {
		t.Fatal("the final phase was recorded before the claims were unprepared")
	}
	if err := s.SyncTerminatingPod(context.Background(), pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Statuses.Get(pod.UID); len(claims.calls) != 2 || claims.calls[1] != pod.UID || st.Phase != v1.PodFailed {
		t.Fatalf("unprepare calls %v, phase %s; want 2 for the pod, then Failed", claims.calls, st.Phase)
	}
}
