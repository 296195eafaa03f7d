package podrun

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// stepPoll is how often the pod's timeline and status are looked at for something to print.
var stepPoll = 200 * time.Millisecond

// stepPrinter prints one line for each step of the pod's timeline as it ends, and when the
// pod becomes Ready or stops being Ready.
type stepPrinter struct {
	out     io.Writer
	pod     Pod
	printed map[string]bool
	origin  time.Time
	ready   bool
}

func newStepPrinter(out io.Writer, pod Pod) *stepPrinter {
	return &stepPrinter{out: out, pod: pod, printed: map[string]bool{}}
}

// Run prints until ctx ends, and once more then.
func (p *stepPrinter) Run(ctx context.Context) error {
	wait.NonSlidingUntilWithContext(ctx, func(context.Context) { p.print() }, stepPoll)
	p.print()
	return nil
}

// print writes what happened since the last call.
func (p *stepPrinter) print() {
	if tl, ok := p.pod.Timeline(); ok {
		for _, s := range tl.Steps {
			if p.origin.IsZero() {
				p.origin = s.Start
			}
			key := fmt.Sprintf("%s\x00%s\x00%d", s.Name, s.Container, s.Start.UnixNano())
			if s.InProgress || p.printed[key] {
				continue
			}
			p.printed[key] = true
			fmt.Fprintf(p.out, "[+%.2fs] %s\n", s.End.Sub(p.origin).Seconds(), describeStep(s))
		}
	}
	st, ok := p.pod.Status()
	if !ok || podReady(st) == p.ready {
		return
	}
	p.ready = !p.ready
	at := time.Now()
	if p.origin.IsZero() {
		p.origin = at
	}
	what := "pod ready"
	if !p.ready {
		what = "pod not ready"
	}
	fmt.Fprintf(p.out, "[+%.2fs] %s\n", at.Sub(p.origin).Seconds(), what)
}

// describeStep is one step as a line: "container exited main: exit code 3 (took 2ms)".
func describeStep(s timeline.Step) string {
	var b strings.Builder
	b.WriteString(s.Name)
	if s.Container != "" {
		b.WriteString(" " + s.Container)
	}
	if s.Detail != "" {
		b.WriteString(": " + s.Detail)
	}
	if s.Error != "" {
		b.WriteString(" failed: " + s.Error)
	}
	if took := s.End.Sub(s.Start); took >= 10*time.Millisecond {
		b.WriteString(" (took " + took.Round(time.Millisecond).String() + ")")
	}
	return b.String()
}

func podReady(st v1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
