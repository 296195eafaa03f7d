package explain

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func step(name, container string, start, end int) timeline.Step {
	return timeline.Step{Name: name, Container: container, Start: at(start), End: at(end)}
}

func podWith(cs v1.ContainerStatus, conds ...v1.PodCondition) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", CreationTimestamp: metav1.NewTime(at(0))},
		Status: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{cs}, Conditions: conds}}
}

func TestExplainSaysWhatThePodWaitsOn(t *testing.T) {
	base := []timeline.Step{step(timeline.Admitted, "", 0, 0), step(timeline.SandboxCreated, "", 0, 2)}
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		steps []timeline.Step
		want  string
		since time.Duration
	}{
		{"pulling", podWith(v1.ContainerStatus{Name: "app", Image: "x.local/app:1", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}),
			base, "waiting on image pull of x.local/app:1 for 12s", 12 * time.Second},
		{"pull back-off", podWith(v1.ContainerStatus{Name: "app", Image: "x.local/app:1", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}),
			append(base, timeline.Step{Name: timeline.ImagePulled, Container: "app", Start: at(2), End: at(4), Error: "401"}),
			"waiting on image pull of x.local/app:1 for 12s: ImagePullBackOff", 12 * time.Second},
		{"crash loop", podWith(v1.ContainerStatus{Name: "app", RestartCount: 3,
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(at(4))}}}),
			base, "container app in back-off after exit 1 (Error), restarted 3 times: back-off 40s", 10 * time.Second},
		{"readiness failing", podWith(v1.ContainerStatus{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at(3))}}}),
			append(base, step("readiness probe failed", "app", 4, 4)), "readiness probe of app failing for 10s", 10 * time.Second},
		{"claim not reserved", podWith(v1.ContainerStatus{Name: "app", Image: "x.local/app:1", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}),
			[]timeline.Step{step(timeline.Admitted, "", 0, 0),
				{Name: timeline.ClaimsPrepared, Start: at(1), End: at(1), Error: "pod p(u1) is not allowed to use resource claim gpu(c1)"},
				{Name: timeline.ClaimsPrepared, Start: at(5), End: at(5), Error: "pod p(u1) is not allowed to use resource claim gpu(c1)"}},
			"waiting on its ResourceClaims to be prepared for 13s: pod p(u1) is not allowed to use resource claim gpu(c1)", 13 * time.Second},
		{"pull in progress", podWith(v1.ContainerStatus{Name: "app", Image: "x.local/app:1", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}),
			append(base, timeline.Step{Name: timeline.ImagePulled, Container: "app", Detail: "x.local/big:2", Start: at(5), End: at(14), InProgress: true}),
			"waiting on image pull of x.local/big:2 for 9s", 9 * time.Second},
		{"volumes", podWith(v1.ContainerStatus{Name: "app", Image: "x.local/app:1", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}),
			[]timeline.Step{step(timeline.Admitted, "", 0, 0), {Name: timeline.VolumesMounted, Start: at(1), InProgress: true}},
			"waiting on the pod's volumes to be set up for 13s", 13 * time.Second},
		{"stopping", podWith(v1.ContainerStatus{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(at(5))}),
			append(base, timeline.Step{Name: timeline.Stopped, Detail: "1 containers", Start: at(10), End: at(14), InProgress: true}),
			"stopping 1 containers for 4s", 4 * time.Second},
		{"ready", podWith(v1.ContainerStatus{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(at(5))}),
			base, "ready for 9s", 0},
	} {
		v := Explain(tc.pod, timeline.Timeline{Steps: tc.steps}, at(14))
		if !strings.HasPrefix(v.Line, tc.want) || v.Since != tc.since || v.Waiting != (tc.since > 0) {
			t.Errorf("%s: %+v, want %q waiting %v", tc.name, v, tc.want, tc.since)
		}
	}
	refused := Explain(&v1.Pod{}, timeline.Timeline{Steps: []timeline.Step{{Name: timeline.Refused, Detail: "OutOfmemory", Error: "no room"}}}, at(1))
	if refused.Waiting || refused.Line != "refused at admission: OutOfmemory: no room" {
		t.Errorf("refused: %+v", refused)
	}
}

func TestTableListsTheSteps(t *testing.T) {
	var out bytes.Buffer
	tl := timeline.Timeline{Steps: []timeline.Step{
		{Name: timeline.SandboxCreated, Call: "RunPodSandbox", Detail: "10.85.0.7", Start: at(0), End: at(1)},
		{Name: timeline.StartFailed, Container: "app", Detail: "attempt 0", Error: "no such file", Start: at(2), End: at(2)},
		{Name: timeline.ImagePulled, Container: "app", Detail: "x.local/big:2", Start: at(3), End: at(9), InProgress: true},
	}}
	if err := Table(&out, tl); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[3], "6s so far") || !strings.Contains(lines[1], "RunPodSandbox") || !strings.Contains(lines[1], "+0s") ||
		!strings.Contains(lines[2], "+2s") || !strings.Contains(lines[2], "attempt 0 error: no such file") {
		t.Errorf("table:\n%s", out.String())
	}
}
