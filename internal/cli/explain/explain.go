// Package explain answers "why is this pod slow or stuck?" from what the node knows: the
// pod's status and its timeline (internal/podspec/timeline). It prints the timeline as a table and one
// line saying what the pod waits on now and for how long.
package explain

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// Verdict is what the pod is waiting on and since how long; Waiting is false when it waits on
// nothing (ready, or finished).
type Verdict struct {
	Waiting bool
	Since   time.Duration
	Line    string
}

// Table prints the steps with their offset from the first, duration, call and detail.
func Table(w io.Writer, tl timeline.Timeline) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tTOOK\tSTEP\tCONTAINER\tCALL\tDETAIL")
	var origin time.Time
	if len(tl.Steps) > 0 {
		origin = tl.Steps[0].Start
	}
	for _, s := range tl.Steps {
		detail := s.Detail
		if s.Error != "" {
			detail = strings.TrimSpace(detail + " error: " + s.Error)
		}
		took := round(s.End.Sub(s.Start)).String()
		if s.InProgress {
			took += " so far"
		}
		fmt.Fprintf(tw, "+%s\t%s\t%s\t%s\t%s\t%s\n", round(s.Start.Sub(origin)), took,
			s.Name, dash(s.Container), dash(s.Call), dash(detail))
	}
	if tl.Dropped > 0 {
		fmt.Fprintf(tw, "\t\t(%d steps left out)\t\t\t\n", tl.Dropped)
	}
	return tw.Flush()
}

// Explain decides what pod waits on now.
func Explain(pod *v1.Pod, tl timeline.Timeline, now time.Time) Verdict {
	if len(tl.Steps) > 0 && tl.Steps[len(tl.Steps)-1].Name == timeline.Refused {
		last := tl.Steps[len(tl.Steps)-1]
		return Verdict{Line: fmt.Sprintf("refused at admission: %s: %s", last.Detail, last.Error)}
	}
	switch pod.Status.Phase {
	case v1.PodSucceeded, v1.PodFailed:
		return Verdict{Line: strings.TrimSpace(fmt.Sprintf("finished: %s %s %s", pod.Status.Phase, pod.Status.Reason, pod.Status.Message))}
	}
	if v, ok := inProgressVerdict(tl, now); ok {
		return v
	}
	if last := lastStep(tl, "", ""); last != nil && last.Name == timeline.ClaimsPrepared && last.Error != "" {
		since := sinceStep(tl, "", timeline.ClaimsPrepared, now, pod)
		return Verdict{Waiting: true, Since: since, Line: fmt.Sprintf("waiting on its ResourceClaims to be prepared for %s: %s", round(since), last.Error)}
	}
	statuses := append(append([]v1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if v, ok := containerVerdict(pod, cs, tl, now); ok {
			return v
		}
	}
	if ready := podCondition(pod, v1.PodReady); ready != nil && ready.Status == v1.ConditionTrue {
		return Verdict{Line: fmt.Sprintf("ready for %s", round(now.Sub(ready.LastTransitionTime.Time)))}
	}
	if len(statuses) == 0 {
		since := now.Sub(pod.CreationTimestamp.Time)
		if last := lastStep(tl, "", ""); last != nil {
			since = now.Sub(last.End)
			return Verdict{Waiting: true, Since: since, Line: fmt.Sprintf("waiting after %q for %s", last.Name, round(since))}
		}
		return Verdict{Waiting: true, Since: since, Line: fmt.Sprintf("waiting to start for %s", round(since))}
	}
	return Verdict{Waiting: true, Line: "not ready"}
}

// inProgressVerdict names the latest step that has begun and not ended: what the pod waits on
// right now, however its status reads.
func inProgressVerdict(tl timeline.Timeline, now time.Time) (Verdict, bool) {
	for i := len(tl.Steps) - 1; i >= 0; i-- {
		s := tl.Steps[i]
		if !s.InProgress {
			continue
		}
		since := now.Sub(s.Start)
		var line string
		switch s.Name {
		case timeline.ImagePulled:
			line = fmt.Sprintf("waiting on image pull of %s for %s", s.Detail, round(since))
		case timeline.SandboxCreated:
			line = fmt.Sprintf("waiting on the pod sandbox (RunPodSandbox) for %s", round(since))
		case timeline.VolumesMounted:
			line = fmt.Sprintf("waiting on the pod's volumes to be set up for %s", round(since))
		case timeline.Stopped:
			line = fmt.Sprintf("stopping %s for %s", s.Detail, round(since))
		default:
			line = fmt.Sprintf("waiting on %s of container %s (%s) for %s", s.Name, dash(s.Container), dash(s.Call), round(since))
		}
		return Verdict{Waiting: true, Since: since, Line: line}, true
	}
	return Verdict{}, false
}

// containerVerdict explains a container that keeps the pod from being ready.
func containerVerdict(pod *v1.Pod, cs v1.ContainerStatus, tl timeline.Timeline, now time.Time) (Verdict, bool) {
	if w := cs.State.Waiting; w != nil {
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "RegistryUnavailable", "SignatureValidationFailed":
			since := sinceStep(tl, cs.Name, timeline.ImagePulled, now, pod)
			return Verdict{true, since, fmt.Sprintf("waiting on image pull of %s for %s: %s %s", cs.Image, round(since), w.Reason, w.Message)}, true
		case "CrashLoopBackOff":
			since := time.Duration(0)
			exit := ""
			if t := cs.LastTerminationState.Terminated; t != nil {
				since, exit = now.Sub(t.FinishedAt.Time), fmt.Sprintf(" after exit %d (%s)", t.ExitCode, t.Reason)
			}
			return Verdict{true, since, fmt.Sprintf("container %s in back-off%s, restarted %d times: %s", cs.Name, exit, cs.RestartCount, w.Message)}, true
		case "ContainerCreating", "PodInitializing", "":
			if last := lastStep(tl, "", ""); last != nil && last.Name == timeline.SandboxCreated {
				since := now.Sub(last.End)
				return Verdict{true, since, fmt.Sprintf("waiting on image pull of %s for %s", cs.Image, round(since))}, true
			}
			since := now.Sub(pod.CreationTimestamp.Time)
			return Verdict{true, since, fmt.Sprintf("container %s is being created (%s) for %s", cs.Name, dash(w.Reason), round(since))}, true
		default:
			since := sinceStep(tl, cs.Name, timeline.StartFailed, now, pod)
			return Verdict{true, since, fmt.Sprintf("container %s cannot start for %s: %s: %s", cs.Name, round(since), w.Reason, w.Message)}, true
		}
	}
	if cs.State.Running != nil && !cs.Ready {
		if s := lastStep(tl, cs.Name, "readiness probe "); s != nil && s.Name == "readiness probe failed" {
			since := now.Sub(s.Start)
			return Verdict{true, since, fmt.Sprintf("readiness probe of %s failing for %s", cs.Name, round(since))}, true
		}
		if s := lastStep(tl, cs.Name, "startup probe "); s != nil && s.Name == "startup probe failed" {
			since := now.Sub(s.Start)
			return Verdict{true, since, fmt.Sprintf("startup probe of %s failing for %s", cs.Name, round(since))}, true
		}
		since := now.Sub(cs.State.Running.StartedAt.Time)
		return Verdict{true, since, fmt.Sprintf("container %s running for %s but not ready yet", cs.Name, round(since))}, true
	}
	return Verdict{}, false
}

// lastStep is the latest step of container (any when empty) whose name starts with prefix.
func lastStep(tl timeline.Timeline, container, prefix string) *timeline.Step {
	for i := len(tl.Steps) - 1; i >= 0; i-- {
		s := &tl.Steps[i]
		if (container == "" || s.Container == container) && strings.HasPrefix(s.Name, prefix) {
			return s
		}
	}
	return nil
}

// sinceStep is how long ago the first step of container named name began, else the pod's age.
func sinceStep(tl timeline.Timeline, container, name string, now time.Time, pod *v1.Pod) time.Duration {
	for _, s := range tl.Steps {
		if s.Container == container && s.Name == name {
			return now.Sub(s.Start)
		}
	}
	return now.Sub(pod.CreationTimestamp.Time)
}

func podCondition(pod *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
