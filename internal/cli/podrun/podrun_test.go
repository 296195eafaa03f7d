package podrun

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// fakePod is the agent's side of a foreground run: a status, a timeline, and what Stop and
// Remove were asked.
type fakePod struct {
	logDir string

	mu        sync.Mutex
	status    v1.PodStatus
	steps     []timeline.Step
	done      bool
	stopped   bool
	removed   bool
	logsAtRm  bool // the log directory still existed when Remove came (logs read first)
	removeErr error
}

func (p *fakePod) Status() (v1.PodStatus, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.status.Phase != ""
}

func (p *fakePod) Timeline() (timeline.Timeline, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return timeline.Timeline{Steps: append([]timeline.Step(nil), p.steps...)}, len(p.steps) > 0
}

func (p *fakePod) Done() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *fakePod) Stop(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped, p.done = true, true
	p.status.Phase = v1.PodFailed
	return nil
}

func (p *fakePod) Remove(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := os.Stat(p.logDir)
	p.removed, p.logsAtRm = true, err == nil
	return p.removeErr
}

func (p *fakePod) set(f func(p *fakePod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func testPod() *v1.Pod {
	grace := int64(5)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "job-node1", UID: "uid-1"},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace, RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "main"}}},
	}
}

func terminated(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

// A pod that ends by itself: its logs are streamed to the end, the steps and the end are told,
// and the pod is removed only after its logs were read.
func TestForegroundStreamsUntilThePodEnds(t *testing.T) {
	pod := testPod()
	logsDir := t.TempDir()
	fake := &fakePod{logDir: LogDir(logsDir, pod)}
	var logs, events syncBuffer
	f := &Foreground{Pod: pod, PodLogsDir: logsDir, Logs: &logs, Events: &events}
	start := time.Now()
	go func() {
		fake.set(func(p *fakePod) {
			p.status.Phase = v1.PodRunning
			p.steps = []timeline.Step{{Name: timeline.Admitted, Start: start, End: start},
				{Name: timeline.ContainerStarted, Container: "main", Detail: "attempt 0", Start: start, End: start.Add(20 * time.Millisecond)}}
		})
		appendLog(t, fake.logDir, "main", 0, criLine("stdout", "F", "line 1"), criLine("stdout", "F", "line 2"))
		time.Sleep(50 * time.Millisecond)
		appendLog(t, fake.logDir, "main", 0, criLine("stdout", "F", "line 3"))
		fake.set(func(p *fakePod) {
			p.status = v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{terminated("main", 3)}}
			p.done = true
		})
	}()
	res, err := f.Drive(context.Background(), fake)
	if err != nil {
		t.Fatal(err)
	}
	if res.Interrupted || ExitCode(pod, res.Status) != 3 {
		t.Errorf("result %+v, exit code %d; want the pod's own end with exit code 3", res, ExitCode(pod, res.Status))
	}
	if got := logs.String(); got != "main | line 1\nmain | line 2\nmain | line 3\n" {
		t.Errorf("logs:\n%s", got)
	}
	ev := events.String()
	for _, want := range []string{"] admitted\n", "] container started main: attempt 0 (took 20ms)\n",
		"pod default/job-node1 Failed: container main exited with code 3\n", "pod default/job-node1 removed\n"} {
		if !strings.Contains(ev, want) {
			t.Errorf("events do not say %q:\n%s", want, ev)
		}
	}
	if fake.stopped || !fake.removed || !fake.logsAtRm {
		t.Errorf("stopped %v removed %v (logs there at removal %v); want removed after reading, not stopped", fake.stopped, fake.removed, fake.logsAtRm)
	}
}

// A signal stops the pod gracefully, then removes it; the run reports the interruption.
func TestForegroundStopsOnSignal(t *testing.T) {
	pod := testPod()
	logsDir := t.TempDir()
	fake := &fakePod{logDir: LogDir(logsDir, pod), status: v1.PodStatus{Phase: v1.PodRunning}}
	var events syncBuffer
	f := &Foreground{Pod: pod, PodLogsDir: logsDir, Logs: &syncBuffer{}, Events: &events}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(errors.New("terminated signal received")) })
	res, err := f.Drive(ctx, fake)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || !fake.stopped || !fake.removed {
		t.Errorf("interrupted %v stopped %v removed %v, want all", res.Interrupted, fake.stopped, fake.removed)
	}
	if code := SignalExitCode(context.Cause(ctx)); code != 143 {
		t.Errorf("exit code %d after SIGTERM, want 143", code)
	}
	if !strings.Contains(events.String(), "stopping pod default/job-node1 (terminated signal received; grace period 5s)") {
		t.Errorf("events:\n%s", events.String())
	}
}

// A removal that fails is the run's error, saying what is left behind.
func TestForegroundReportsAFailedRemoval(t *testing.T) {
	pod := testPod()
	fake := &fakePod{done: true, status: v1.PodStatus{Phase: v1.PodSucceeded}, removeErr: errors.New("runtime down")}
	f := &Foreground{Pod: pod, PodLogsDir: t.TempDir(), Logs: &syncBuffer{}, Events: &syncBuffer{}}
	_, err := f.Drive(context.Background(), fake)
	if err == nil || !strings.Contains(err.Error(), "runtime down") || !strings.Contains(err.Error(), "may be left in the runtime") {
		t.Fatalf("Drive: %v", err)
	}
}

func TestExitCodeRules(t *testing.T) {
	pod := testPod()
	pod.Spec.InitContainers = []v1.Container{{Name: "setup"}}
	pod.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b"}}
	for _, tc := range []struct {
		name   string
		status v1.PodStatus
		want   int
	}{
		{"succeeded", v1.PodStatus{Phase: v1.PodSucceeded}, 0},
		{"first failing app container in spec order", v1.PodStatus{Phase: v1.PodFailed,
			ContainerStatuses: []v1.ContainerStatus{terminated("b", 7), terminated("a", 4)}}, 4},
		{"a zero exit is not the failure", v1.PodStatus{Phase: v1.PodFailed,
			ContainerStatuses: []v1.ContainerStatus{terminated("a", 0), terminated("b", 2)}}, 2},
		{"the failed init container", v1.PodStatus{Phase: v1.PodFailed,
			InitContainerStatuses: []v1.ContainerStatus{terminated("setup", 9)}}, 9},
		{"refused: no container ran", v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfmemory"}, 1},
		{"out of range", v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{terminated("a", 300)}}, 1},
		{"negative", v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{terminated("a", -1)}}, 1},
	} {
		if got := ExitCode(pod, tc.status); got != tc.want {
			t.Errorf("%s: exit code %d, want %d", tc.name, got, tc.want)
		}
	}
	// A sidecar is killed once the app is done: its exit code is not the pod's.
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = append([]v1.Container{{Name: "proxy", RestartPolicy: &always}}, pod.Spec.InitContainers...)
	failed := v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: []v1.ContainerStatus{terminated("proxy", 137), terminated("setup", 0)},
		ContainerStatuses: []v1.ContainerStatus{terminated("a", 4), terminated("b", 0)}}
	if got := ExitCode(pod, failed); got != 4 {
		t.Errorf("with a killed sidecar: exit code %d, want the app's 4", got)
	}
	for cause, want := range map[error]int{
		errors.New("interrupt signal received"): 130, errors.New("terminated signal received"): 143,
		context.Canceled: 130, nil: 130,
	} {
		if got := SignalExitCode(cause); got != want {
			t.Errorf("SignalExitCode(%v) = %d, want %d", cause, got, want)
		}
	}
}
