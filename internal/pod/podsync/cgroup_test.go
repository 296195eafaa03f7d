package podsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nodelet/nodelet/internal/pod/status"
	"github.com/nodelet/nodelet/internal/runtime/container"
)

// removingRuntime records RemovePod; the syncer calls nothing else on the path under test.
type removingRuntime struct {
	container.Runtime
	calls *[]string
}

func (r removingRuntime) RemovePod(_ context.Context, uid types.UID) error {
	*r.calls = append(*r.calls, "runtime "+string(uid))
	return nil
}

func TestTerminatedPodRemovalRemovesTheCgroupAndRetriesOnError(t *testing.T) {
	var calls []string
	cgroupErr := errors.New("device or resource busy")
	root := t.TempDir()
	cgroup := ReleaseFunc("cgroup", func(uid types.UID) error {
		calls = append(calls, "cgroup "+string(uid))
		return cgroupErr
	})
	s := New(Deps{
		Runtime: removingRuntime{calls: &calls}, Statuses: status.NewManager(nil),
		Backoff: flowcontrol.NewBackOff(time.Second, time.Minute), RootDir: root, Volumes: &fakeVolumes{root: root},
		Release: Release{Host: []Releaser{cgroup, &fakeVolumes{root: root}}},
	})
	podDir := filepath.Join(root, "pods", "u1")
	if err := os.MkdirAll(podDir, 0o750); err != nil {
		t.Fatal(err)
	}
	err := s.SyncTerminatedPod(context.Background(), nil, "u1", true)
	if !errors.Is(err, cgroupErr) {
		t.Fatalf("SyncTerminatedPod: %v, want the cgroup error", err)
	}
	if len(calls) != 2 || calls[0] != "runtime u1" || calls[1] != "cgroup u1" {
		t.Errorf("calls %v, want the runtime removal then the cgroup's", calls)
	}
	if _, err := os.Stat(podDir); err != nil {
		t.Errorf("pod directory removed before the cgroup was: %v", err)
	}
	cgroupErr = nil
	if err := s.SyncTerminatedPod(context.Background(), nil, "u1", true); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod directory left: %v", err)
	}
}
