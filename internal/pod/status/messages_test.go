package status

import (
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/runtime/container"
)

func withMessage(c *container.ContainerStatus, msg string) *container.ContainerStatus {
	c.Message = msg
	return c
}

func TestTerminationMessagesShareTheTwelveKiBOfThePod(t *testing.T) {
	// One init and three app containers: 12 KiB / 4 = 3072 bytes each, current and last states.
	pod := podWith(v1.RestartPolicyAlways, []string{"init"}, "a", "b", "c")
	prevB := withMessage(exited("b", 1), strings.Repeat("p", 4096))
	prevB.ID = "b-old"
	cur := withMessage(exited("b", 2), strings.Repeat("q", 4096))
	cur.RestartCount = 1
	in := Input{Pod: pod, Runtime: rs(true,
		withMessage(exited("init", 0), strings.Repeat("i", 4096)),
		withMessage(exited("a", 1), strings.Repeat("a", 4096)),
		cur, prevB,
		withMessage(exited("c", 1), "short"),
	)}
	st := Compute(in)
	total := 0
	check := func(name string, term *v1.ContainerStateTerminated, want int) {
		t.Helper()
		if term == nil {
			t.Fatalf("%s: no terminated state", name)
		}
		if len(term.Message) != want {
			t.Errorf("%s: message of %d bytes, want %d", name, len(term.Message), want)
		}
		total += len(term.Message)
	}
	check("init", st.InitContainerStatuses[0].State.Terminated, 3072)
	check("a", st.ContainerStatuses[0].State.Terminated, 3072)
	check("b", st.ContainerStatuses[1].State.Terminated, 3072)
	check("b last", st.ContainerStatuses[1].LastTerminationState.Terminated, 3072)
	check("c", st.ContainerStatuses[2].State.Terminated, len("short"))
	if !strings.HasPrefix(st.ContainerStatuses[1].State.Terminated.Message, "qqq") {
		t.Errorf("b's message lost its start")
	}
	if total > 4*3072+len("short") {
		t.Errorf("%d bytes in all", total)
	}
}

func TestTerminationMessageCapKeepsUTF8Whole(t *testing.T) {
	term := &v1.ContainerStateTerminated{Message: "ab" + strings.Repeat("é", 10)} // é is 2 bytes
	capMessage(term, 5)
	if term.Message != "abé" || !utf8.ValidString(term.Message) {
		t.Fatalf("capped to %q", term.Message)
	}
}
