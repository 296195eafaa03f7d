package main

import (
	"strings"
	"testing"
)

func testCauses(t *testing.T) []cause {
	t.Helper()
	c, err := readCauses("testdata/causes.txt")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCauseNeedsSpecAndMessage(t *testing.T) {
	causes := testCauses(t)
	envFail := result{state: stateFailed, full: `expected "data-1=value-1" in container output: Expected <string>: X`}
	if got := causeOf(causes, "nodelet", specEnv, envFail); got != "shell drops data-1" {
		t.Errorf("spec and message match: cause %q", got)
	}
	other := result{state: stateFailed, full: "pod never became ready"}
	if got := causeOf(causes, "nodelet", specEnv, other); got != "" {
		t.Errorf("message differs: cause %q, want none", got)
	}
	if got := causeOf(causes, "nodelet", specPods, envFail); got != "" {
		t.Errorf("spec differs: cause %q, want none", got)
	}
	own := result{state: stateTimedOut, full: "A spec timeout occurred"}
	if got := causeOf(causes, "kubelet", specOwnTime, own); got != "" {
		t.Errorf("nodelet-only cause applied to the upstream kubelet: %q", got)
	}
	if got := causeOf(causes, "nodelet", specOwnTime, own); got != "nodelet-only cause of the spec timeout" {
		t.Errorf("nodelet cause: %q", got)
	}
}

func TestReadCausesRejectsOldFormat(t *testing.T) {
	path := t.TempDir() + "/causes.txt"
	writeTestFile(t, path, "KubeletManagedEtcHosts ## a cause keyed on the spec alone\n")
	if _, err := readCauses(path); err == nil {
		t.Error("a line without a message pattern was accepted")
	}
}

func TestDescribeNamesNodeletsPodError(t *testing.T) {
	r := mustRead(t, "testdata/nodelet/report.json")
	got := describe(nil, "nodelet", specHang, r.results[specHang], podErrors("testdata/nodelet.log"))
	if !strings.HasPrefix(got, "nodelet logged: create sandbox: no CNI — suite: the TIMEOUT budget ended") {
		t.Errorf("describe = %q", got)
	}
}
