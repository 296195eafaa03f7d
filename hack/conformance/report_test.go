package main

import (
	"strings"
	"testing"
)

const (
	specPods    = "[sig-node] Pods should be submitted and removed"
	specEnv     = "[sig-node] ConfigMap should be consumable via the environment [NodeConformance]"
	specHang    = "[sig-node] Hangs waits for pod \"hang-pod\" forever"
	specOwnTime = "[sig-node] Hangs has its own spec timeout"
	specLater   = "[sig-node] Later never started"
	specPull    = "[sig-node] Images should be able to pull image [NodeConformance]"
)

func mustRead(t *testing.T, path string) *run {
	t.Helper()
	r, err := loadColumn(path, parallelSelection)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A spec running when the TIMEOUT budget ended, or past its own time limit, is failed
// ("timed out") on that kubelet; one that never started is "not run".
func TestTimedOutCountsAsFailed(t *testing.T) {
	r := mustRead(t, "testdata/nodelet/report.json")
	if !r.budgetEnded {
		t.Error("budgetEnded = false for a report interrupted by its timeout")
	}
	want := map[string]string{
		specPods:    statePassed,
		specEnv:     stateFailed,
		specHang:    stateTimedOut,
		specOwnTime: stateTimedOut,
		specLater:   stateNotRun,
		specPull:    stateSkipped,
	}
	for name, st := range want {
		if got := r.results[name].state; got != st {
			t.Errorf("%s: state %q, want %q", name, got, st)
		}
	}
	if !r.results[specHang].failed() {
		t.Errorf("timed-out spec does not count as failed")
	}
	got := r.counts()
	if (got != tally{passed: 1, failed: 3, timedOut: 2, skipped: 1, notRun: 1}) {
		t.Errorf("counts = %+v", got)
	}
}

// Specs outside the run's --focus and the label filter are absent, not "not run".
func TestFocusAndLabelsLeaveSpecsOut(t *testing.T) {
	r := mustRead(t, "testdata/nodelet/report.json")
	for _, name := range []string{"[sig-node] Unfocused is outside the focus", "[sig-node] Pods serial spec"} {
		if _, ok := r.results[name]; ok {
			t.Errorf("%s is in the column; want it left out", name)
		}
	}
	if len(r.names) != 6 {
		t.Errorf("names = %q, want 6 specs", r.names)
	}
}

// Older ginkgo reports the budget's end as an interrupt of the running spec.
func TestInterruptedByTimeoutIsTimedOut(t *testing.T) {
	spec := specReport{State: "interrupted", Failure: &struct{ Message string }{"Interrupted by Timeout\n\nstack"}}
	res := toResult(spec, false, false)
	if res.state != stateTimedOut || !res.failed() || !strings.HasPrefix(res.message, "the TIMEOUT budget ended") {
		t.Errorf("got %+v, want a failed %q", res, stateTimedOut)
	}
}

func TestInterruptedByUserIsFailedNotTimedOut(t *testing.T) {
	spec := specReport{State: "interrupted", Failure: &struct{ Message string }{"Interrupted by User"}}
	if res := toResult(spec, false, false); res.state != stateInterrupted || !res.failed() {
		t.Errorf("got %+v, want a failed %q", res, stateInterrupted)
	}
}

func TestSkipReasonFromSkipsFile(t *testing.T) {
	r := mustRead(t, "testdata/nodelet/report.json")
	skips, err := readSkips("testdata/skips.txt")
	if err != nil {
		t.Fatal(err)
	}
	r.explainSkips(skips)
	if msg := r.results[specPull].message; msg != "skips.txt: pulls from a registry; none is reachable here" {
		t.Errorf("skip message %q", msg)
	}
}

func TestSmokeFailsOnTimedOutSpec(t *testing.T) {
	if err := checkSmoke(mustRead(t, "testdata/nodelet/report.json")); err == nil {
		t.Error("checkSmoke passed a run with failed and timed-out specs")
	}
}
