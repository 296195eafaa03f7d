package podsync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// fakeRuntime runs every container as soon as SyncPod is called and counts the calls.
type fakeRuntime struct {
	synced, killed int
	running        bool
}

func (f *fakeRuntime) SyncPod(_ context.Context, _ *v1.Pod, _ *container.PodStatus, _ *flowcontrol.Backoff) container.SyncResult {
	f.synced++
	f.running = true
	return container.SyncResult{}
}

func (f *fakeRuntime) KillPod(context.Context, *v1.Pod, *container.RunningPod, int64) error {
	f.killed++
	f.running = false
	return nil
}

func (f *fakeRuntime) RemovePod(context.Context, types.UID) error                { return nil }
func (f *fakeRuntime) PullImages(context.Context, *v1.Pod, *container.PodStatus) {}

func (f *fakeRuntime) GetPodStatus(_ context.Context, uid types.UID, name, ns string) (*container.PodStatus, error) {
	rs := &container.PodStatus{UID: uid, Name: name, Namespace: ns}
	if f.running {
		rs.Sandboxes = []*container.SandboxStatus{{ID: "sb", Ready: true}}
		rs.Containers = []*container.ContainerStatus{{ID: "c1", Name: "app", State: container.StateRunning, StartedAt: time.Now()}}
	}
	return rs, nil
}

func (f *fakeRuntime) GetPods(context.Context, bool) ([]*container.RunningPod, error) {
	return nil, nil
}
func (f *fakeRuntime) Status(context.Context) error                    { return nil }
func (f *fakeRuntime) Version(context.Context) (string, string, error) { return "fake", "0", nil }

func newTestSyncer(t *testing.T, rt container.Runtime) *Syncer {
	root := t.TempDir()
	return New(Deps{
		Runtime: rt, Statuses: status.NewManager(nil), Backoff: flowcontrol.NewBackOff(time.Second, time.Minute),
		RootDir: root, Volumes: &fakeVolumes{root: root},
	})
}

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}, RestartPolicy: v1.RestartPolicyAlways},
	}
}

func TestActiveDeadlineFailsThePod(t *testing.T) {
	rt := &fakeRuntime{}
	s := newTestSyncer(t, rt)
	pod := testPod()
	deadline := int64(30)
	pod.Spec.ActiveDeadlineSeconds = &deadline
	out, err := s.SyncPod(context.Background(), pod)
	if err != nil || out.Terminal {
		t.Fatalf("first sync = %+v, %v", out, err)
	}
	if out.RequeueAfter <= 0 || out.RequeueAfter > 30*time.Second {
		t.Fatalf("RequeueAfter = %v, want the time left before the deadline", out.RequeueAfter)
	}
	// The deadline is lowered below the time the pod has been active (an update).
	st, _ := s.Statuses.Get(pod.UID)
	past := metav1.NewTime(st.StartTime.Add(-time.Minute))
	st.StartTime = &past
	s.Statuses.Set(pod, st)
	out, err = s.SyncPod(context.Background(), pod)
	if err != nil || !out.Terminal {
		t.Fatalf("sync past the deadline = %+v, %v; want terminal", out, err)
	}
	st, _ = s.Statuses.Get(pod.UID)
	if st.Phase != v1.PodFailed || st.Reason != "DeadlineExceeded" {
		t.Fatalf("phase/reason = %s/%q, want Failed/DeadlineExceeded", st.Phase, st.Reason)
	}
	// Killing it keeps the verdict.
	if err := s.SyncTerminatingPod(context.Background(), pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Statuses.Get(pod.UID)
	if rt.killed != 1 || st.Phase != v1.PodFailed || st.Reason != "DeadlineExceeded" {
		t.Fatalf("after kill: killed=%d phase/reason = %s/%q", rt.killed, st.Phase, st.Reason)
	}
}

func TestTerminatedPodGivesBackItsVolumes(t *testing.T) {
	s := newTestSyncer(t, &fakeRuntime{})
	pod := testPod()
	volume := filepath.Join(s.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "cache")
	if err := os.MkdirAll(volume, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncTerminatedPod(context.Background(), pod, pod.UID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(volume))); !os.IsNotExist(err) {
		t.Fatalf("volumes of a terminated pod still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.RootDir, "pods", string(pod.UID))); err != nil {
		t.Fatalf("pod directory removed before the pod is: %v", err)
	}
}

// A pod the API already has as Failed (terminated by a node shutdown before nodelet restarted)
// is not started again: the first sync finds it terminal, keeps the API's reason and runs
// nothing.
func TestPodFinishedInTheAPIIsNotStartedAgain(t *testing.T) {
	rt := &fakeRuntime{}
	s := newTestSyncer(t, rt)
	pod := testPod()
	pod.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "Terminated", Message: "Pod was terminated in response to imminent node shutdown."}
	out, err := s.SyncPod(context.Background(), pod)
	if err != nil || !out.Terminal {
		t.Fatalf("sync = %+v, %v; want terminal", out, err)
	}
	if rt.synced != 0 {
		t.Errorf("the runtime was asked to start the pod %d times", rt.synced)
	}
	if st, _ := s.Statuses.Get(pod.UID); st.Phase != v1.PodFailed || st.Reason != "Terminated" {
		t.Errorf("phase %s reason %q, want Failed/Terminated kept", st.Phase, st.Reason)
	}
}
