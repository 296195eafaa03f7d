package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// fakeVolumes records what the syncer asks of the volume manager, and tears a pod's volumes
// down by removing its volumes directory.
type fakeVolumes struct {
	root     string
	mountErr error
	calls    []string
}

func (f *fakeVolumes) WaitForAttachAndMount(_ context.Context, pod *v1.Pod) error {
	f.calls = append(f.calls, "mount "+string(pod.UID))
	return f.mountErr
}

func (f *fakeVolumes) TearDownPod(_ context.Context, uid types.UID) error {
	f.calls = append(f.calls, "tear down "+string(uid))
	return os.RemoveAll(filepath.Join(f.root, "pods", string(uid), "volumes"))
}

func (f *fakeVolumes) Name() string { return "pod directory" }

// ReleasePod removes the pod's directory, as the volume manager's does.
func (f *fakeVolumes) ReleasePod(uid types.UID) error {
	f.calls = append(f.calls, "remove dir "+string(uid))
	return os.RemoveAll(filepath.Join(f.root, "pods", string(uid)))
}

// Volumes that are not set up stop the sync before the runtime is asked for anything, with
// upstream's FailedMount event; the worker retries.
func TestVolumesNotSetUpStopTheSync(t *testing.T) {
	rt := &fakeRuntime{}
	root := t.TempDir()
	vols := &fakeVolumes{root: root, mountErr: errors.New("unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: PVC ns/x has non-bound phase (\"Pending\")")}
	recorder := record.NewFakeRecorder(10)
	steps := timeline.New()
	s := New(Deps{
		Runtime: rt, Statuses: status.NewManager(nil), Backoff: flowcontrol.NewBackOff(time.Second, time.Minute),
		RootDir: root, Volumes: vols, Recorder: recorder, Timeline: steps,
	})
	pod := testPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	_, err := s.SyncPod(context.Background(), pod)
	if err == nil || rt.synced != 0 {
		t.Fatalf("SyncPod = %v with %d runtime syncs, want an error and none", err, rt.synced)
	}
	want := "Warning FailedMount Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: PVC ns/x has non-bound phase (\"Pending\")"
	if got := <-recorder.Events; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
	// A wait that timed out posts nothing, as upstream: the set-up failures had their events.
	vols.mountErr = fmt.Errorf("unmounted volumes=[data], unattached volumes=[], failed to process volumes=[]: %w", context.DeadlineExceeded)
	if _, err := s.SyncPod(context.Background(), pod); err == nil {
		t.Fatal("SyncPod succeeded with volumes not set up")
	}
	select {
	case got := <-recorder.Events:
		t.Errorf("a timed-out wait posted %q", got)
	default:
	}
	tl, _ := steps.Get(pod.Namespace, pod.Name)
	if n := len(tl.Steps); n == 0 || tl.Steps[n-1].Name != timeline.VolumesMounted || tl.Steps[n-1].Error == "" {
		t.Errorf("timeline %+v, want the failed wait for volumes last", tl.Steps)
	}
	vols.mountErr = nil
	if _, err := s.SyncPod(context.Background(), testPod()); err != nil || rt.synced != 1 {
		t.Errorf("with volumes set up: %v, %d runtime syncs", err, rt.synced)
	}
}

// A terminated pod's volumes are torn down whether or not the pod stays; its directory goes
// only with the pod, after the volumes and the runtime's objects.
func TestTerminatedPodTearsDownVolumesBeforeItsDirectoryGoes(t *testing.T) {
	root := t.TempDir()
	vols := &fakeVolumes{root: root}
	s := New(Deps{
		Runtime: removingRuntime{calls: &vols.calls}, Statuses: status.NewManager(nil),
		Backoff: flowcontrol.NewBackOff(time.Second, time.Minute), RootDir: root, Volumes: vols,
		Release: Release{Host: []Releaser{vols}},
	})
	podDir := filepath.Join(root, "pods", "u1")
	if err := os.MkdirAll(podDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncTerminatedPod(context.Background(), nil, "u1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(podDir); err != nil || !slices.Equal(vols.calls, []string{"tear down u1"}) {
		t.Fatalf("kept pod: calls %v, directory %v", vols.calls, err)
	}
	vols.calls = nil
	if err := s.SyncTerminatedPod(context.Background(), nil, "u1", true); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(vols.calls, ", "); got != "tear down u1, runtime u1, remove dir u1" {
		t.Errorf("calls %s, want the volumes torn down, then the runtime's removal, then the directory", got)
	}
}
