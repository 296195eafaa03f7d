package app

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/podspec/timeline"
)

// Only a change of a probe's result becomes a step.
func TestProbeStepsOnChangeOnly(t *testing.T) {
	rec := timeline.New()
	p := newProbeSteps(rec)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u"}}
	for _, r := range []string{"failed", "failed", "successful", "successful", "successful", "failed"} {
		p.result("Readiness", r, pod, "app")
	}
	p.result("Liveness", "successful", pod, "app")
	got, _ := rec.Get("ns", "web")
	var names []string
	for _, s := range got.Steps {
		names = append(names, s.Name)
	}
	want := []string{"readiness probe failed", "readiness probe successful", "readiness probe failed", "liveness probe successful"}
	if len(names) != len(want) {
		t.Fatalf("steps %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("steps %v, want %v", names, want)
		}
	}
	p.forget("u")
	if len(p.last) != 0 {
		t.Error("a gone pod's results are kept")
	}
}
