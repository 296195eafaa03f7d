package kubeclient

import (
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

func TestCapMessagesCutsLongMessagesOnly(t *testing.T) {
	fake := record.NewFakeRecorder(10)
	r := CapMessages(fake)
	pod := &v1.Pod{}
	r.Eventf(pod, v1.EventTypeWarning, "Unhealthy", "Liveness probe failed: %s", strings.Repeat("x", 15<<20))
	r.Event(pod, v1.EventTypeNormal, "Pulled", "short and whole")
	r.Eventf(pod, v1.EventTypeNormal, "Started", "%s", "100%d literal") // formatted once, not twice
	r.AnnotatedEventf(pod, map[string]string{"a": "b"}, v1.EventTypeWarning, "Failed", "%s", strings.Repeat("y", 1<<20))
	want := []struct {
		prefix string
		size   int
	}{
		{"Warning Unhealthy Liveness probe failed: xxx", len("Warning Unhealthy ") + MaxEventMessage},
		{"Normal Pulled short and whole", len("Normal Pulled short and whole")},
		{"Normal Started 100%d literal", len("Normal Started 100%d literal")},
		{"Warning Failed yyy", len("Warning Failed ") + MaxEventMessage + len(" map[a:b]")}, // the fake adds the annotations
	}
	for i, w := range want {
		got := <-fake.Events
		if !strings.HasPrefix(got, w.prefix) || len(got) != w.size {
			t.Errorf("event %d: %d bytes starting %q, want %d starting %q", i, len(got), got[:min(len(got), 50)], w.size, w.prefix)
		}
	}
}

func TestCapMessageKeepsUTF8Whole(t *testing.T) {
	msg := strings.Repeat("é", MaxEventMessage) // 2 bytes each: the cut falls on a rune start
	if got := CapMessage(msg); len(got) != MaxEventMessage || !utf8.ValidString(got) {
		t.Errorf("cut at %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	msg = "x" + msg // now the cut would split a rune
	if got := CapMessage(msg); len(got) != MaxEventMessage-1 || !utf8.ValidString(got) {
		t.Errorf("cut at %d bytes, valid %v; want %d", len(got), utf8.ValidString(got), MaxEventMessage-1)
	}
}
