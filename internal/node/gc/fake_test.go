package gc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

const testNode = "node-1"

// fakeRuntime is a runtime.GarbageSource over a fixed set of pods; removals take effect on
// the next listing.
type fakeRuntime struct {
	mu       sync.Mutex
	pods     []*container.RunningPod
	removedC []string
	removedS []string
	states   map[string]container.ContainerState // for ContainerLog; absent = not found
	failRm   map[string]bool
	listErr  error
}

func (f *fakeRuntime) GetPods(_ context.Context, all bool) ([]*container.RunningPod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	gone := map[string]bool{}
	for _, id := range append(append([]string(nil), f.removedC...), f.removedS...) {
		gone[id] = true
	}
	var out []*container.RunningPod
	for _, p := range f.pods {
		cp := *p
		cp.Containers, cp.Sandboxes = nil, nil
		for _, c := range p.Containers {
			if !gone[c.ID] {
				cp.Containers = append(cp.Containers, c)
			}
		}
		for _, s := range p.Sandboxes {
			if !gone[s.ID] {
				cp.Sandboxes = append(cp.Sandboxes, s)
			}
		}
		out = append(out, &cp)
	}
	return out, nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRm[id] {
		return errors.New("injected failure")
	}
	f.removedC = append(f.removedC, id)
	return nil
}

func (f *fakeRuntime) RemoveSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRm[id] {
		return errors.New("injected failure")
	}
	f.removedS = append(f.removedS, id)
	return nil
}

func (f *fakeRuntime) ContainerLog(_ context.Context, id string) (*container.ContainerLog, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.states[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, container.ErrContainerNotFound)
	}
	return &container.ContainerLog{ContainerID: id, State: st}, nil
}

func (f *fakeRuntime) removed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append(append([]string(nil), f.removedC...), f.removedS...)
	sort.Strings(out)
	return out
}

// podBuilder makes a RunningPod; times are minutes before base.
type podBuilder struct {
	pod  *container.RunningPod
	base time.Time
}

func newRunningPod(uid, node string, base time.Time) *podBuilder {
	return &podBuilder{pod: &container.RunningPod{UID: types.UID(uid), Name: "pod-" + uid, Namespace: "ns", Node: node}, base: base}
}

func (b *podBuilder) sandbox(id string, ready bool, minutesAgo int) *podBuilder {
	b.pod.Sandboxes = append(b.pod.Sandboxes, &container.SandboxStatus{
		ID: id, Ready: ready, CreatedAt: b.base.Add(-time.Duration(minutesAgo) * time.Minute),
	})
	return b
}

func (b *podBuilder) container(id, name, sandbox string, state container.ContainerState, minutesAgo int) *podBuilder {
	b.pod.Containers = append(b.pod.Containers, &container.ContainerStatus{
		ID: id, Name: name, SandboxID: sandbox, State: state, CreatedAt: b.base.Add(-time.Duration(minutesAgo) * time.Minute),
	})
	return b
}

// testGC builds a ContainerGC over rt where the pods in live exist.
func testGC(t *testing.T, rt *fakeRuntime, policy Policy, live ...string) (*ContainerGC, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	exists := map[types.UID]bool{}
	for _, uid := range live {
		exists[types.UID(uid)] = true
	}
	dir := t.TempDir()
	g, err := New(Options{
		Policy: policy, Runtime: rt, NodeName: testNode, Clock: clk,
		RootDir: dir + "/root", PodLogsDir: dir + "/pods", ContainerLogsDir: dir + "/containers",
		Mountinfo: dir + "/mountinfo",
		PodExists: func(uid types.UID) bool { return exists[uid] },
	})
	if err != nil {
		t.Fatal(err)
	}
	return g, clk
}

func wantRemoved(t *testing.T, rt *fakeRuntime, want ...string) {
	t.Helper()
	sort.Strings(want)
	got := rt.removed()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("removed %v, want %v", got, want)
	}
}
