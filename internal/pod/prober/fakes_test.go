package prober

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/testutil"
)

// fakeStatus is the status manager: the latest API status per pod.
type fakeStatus struct {
	mu       sync.Mutex
	statuses map[types.UID]v1.PodStatus
}

func (f *fakeStatus) get(uid types.UID) (v1.PodStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[uid]
	return st, ok
}

func (f *fakeStatus) set(uid types.UID, st v1.PodStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[uid] = st
}

type execCall struct {
	containerID string
	cmd         []string
	timeout     time.Duration
}

// fakeExec answers exec probes by command: the first word of cmd picks the reply.
type fakeExec struct {
	mu      sync.Mutex
	calls   []execCall
	replies map[string]execReply
}

type execReply struct {
	output string
	code   int32
	err    error
}

func (f *fakeExec) exec(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, execCall{containerID: id, cmd: cmd, timeout: timeout})
	r := f.replies[cmd[0]]
	return []byte(r.output), nil, r.code, r.err
}

func (f *fakeExec) reply(cmd string, r execReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies[cmd] = r
}

// count is how many times the command ran.
func (f *fakeExec) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.cmd[0] == cmd {
			n++
		}
	}
	return n
}

type killCall struct {
	containerID string
	grace       int64
	message     string
}

type fakeKill struct {
	mu    sync.Mutex
	calls []killCall
	err   error
}

func (f *fakeKill) kill(_ context.Context, _ *v1.Pod, id string, grace int64, msg string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, killCall{containerID: id, grace: grace, message: msg})
	return f.err
}

func (f *fakeKill) all() []killCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]killCall(nil), f.calls...)
}

type metricCall struct{ probeType, result, container string }

// fixture is a Manager over fakes.
type fixture struct {
	t        *testing.T
	m        *Manager
	status   *fakeStatus
	exec     *fakeExec
	kill     *fakeKill
	recorder *record.FakeRecorder

	mu      sync.Mutex
	metrics []metricCall
}

func newFixture(t *testing.T) *fixture { return newFixtureOver(t, nil) }

// newFixtureOver publishes the results into store (nil: the Manager's own).
func newFixtureOver(t *testing.T, store *Results) *fixture {
	f := &fixture{
		t: t, status: &fakeStatus{statuses: map[types.UID]v1.PodStatus{}},
		exec: &fakeExec{replies: map[string]execReply{}}, kill: &fakeKill{},
		recorder: record.NewFakeRecorder(1000),
	}
	f.m = New(Deps{
		Exec: f.exec.exec, Kill: f.kill.kill, Status: f.status.get, Recorder: f.recorder,
		OnResult: func(probeType, result string, _ *v1.Pod, container string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.metrics = append(f.metrics, metricCall{probeType, result, container})
		},
		Results: store,
	})
	testutil.Start(t, f.m.Run)
	return f
}

// worker registers a worker for the container's probe without starting its goroutine, so a
// test drives it with doProbe.
func (f *fixture) worker(pod *v1.Pod, container string, kind probeKind) *worker {
	c := findContainer(pod, container)
	probe := map[probeKind]*v1.Probe{liveness: c.LivenessProbe, readiness: c.ReadinessProbe, startup: c.StartupProbe}[kind]
	key := workerKey{uid: pod.UID, container: container, kind: kind}
	w := newWorker(f.m, key, pod, probe)
	f.m.mu.Lock()
	f.m.workers[key] = w
	f.m.mu.Unlock()
	return w
}

// running records a running instance id of the container, started at startedAt.
func (f *fixture) running(pod *v1.Pod, container, id string, startedAt time.Time) {
	f.status.set(pod.UID, v1.PodStatus{
		Phase: v1.PodRunning, PodIP: "127.0.0.1",
		ContainerStatuses: []v1.ContainerStatus{{
			Name: container, ContainerID: "containerd://" + id,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
		}},
	})
}

func (f *fixture) exited(pod *v1.Pod, container, id string) {
	f.status.set(pod.UID, v1.PodStatus{
		Phase: v1.PodRunning, PodIP: "127.0.0.1",
		ContainerStatuses: []v1.ContainerStatus{{
			Name: container, ContainerID: "containerd://" + id,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137}},
		}},
	})
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case ev := <-f.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// updates drains the update channel.
func (f *fixture) updates() []types.UID {
	var out []types.UID
	for {
		select {
		case uid := <-f.m.updates:
			out = append(out, uid)
		default:
			return out
		}
	}
}

func (f *fixture) metricCalls() []metricCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]metricCall(nil), f.metrics...)
}

func hasEvent(events []string, prefix string) bool {
	for _, ev := range events {
		if strings.HasPrefix(ev, prefix) {
			return true
		}
	}
	return false
}

func execProbe(cmd string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}}}
}

func probePod(c v1.Container) *v1.Pod {
	grace := int64(30)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{c}, RestartPolicy: v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace},
	}
}
