package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The DRA section comes last, keeps only the specs of dra.txt's focus (the suite's DRA specs
// are Serial, which the !Flaky label filter lets through), and says how to run it while no
// column is kept.
func TestDRASection(t *testing.T) {
	dir := t.TempDir()
	focus := filepath.Join(dir, "dra.txt")
	writeTestFile(t, focus, "# comment\n\\[sig-node\\] DRA \\[Feature:DynamicResourceAllocation\\] ResourceSlice ## slices\n")
	const inFocus = "[sig-node] DRA [Feature:DynamicResourceAllocation] ResourceSlice [Serial] must be removed after plugin unregistration"
	spec := func(texts, leaf, state, label string) string {
		return `{"ContainerHierarchyTexts": [` + texts + `], "ContainerHierarchyLabels": [["` + label + `"]], "LeafNodeType": "It", ` +
			`"LeafNodeText": "` + leaf + `", "State": "` + state + `"}`
	}
	ginkgoJSON := `[{"SpecReports": [` +
		spec(`"[sig-node] DRA [Feature:DynamicResourceAllocation]", "ResourceSlice [Serial]"`, "must be removed after plugin unregistration", "passed", "Serial") + `, ` +
		spec(`"[sig-node] Pods"`, "should run", "passed", "NodeConformance") + `, ` +
		spec(`"[sig-node] DRA [Feature:DynamicResourceAllocation]", "ResourceSlice [Serial]"`, "is flaky", "failed", "Flaky") + `]}]`
	for _, subject := range []string{"nodelet", "kubelet"} {
		writeTestFile(t, filepath.Join(dir, subject, "report.json"), ginkgoJSON)
	}
	main := report{nodelet: emptyRun(), upstream: emptyRun(), generated: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	sec, err := loadFocusSelection(focus, filepath.Join(dir, "nodelet"), filepath.Join(dir, "kubelet"), main)
	if err != nil {
		t.Fatal(err)
	}
	if sec.results == nil || len(sec.results.nodelet.names) != 1 || sec.results.nodelet.results[inFocus].state != statePassed {
		t.Fatalf("want only %q, passed: %+v", inFocus, sec.results)
	}
	main.podapi, main.dra = &focusSection{}, sec
	page := writePage(&main)
	podapiAt, draAt := strings.Index(page, "# Pod API selection"), strings.Index(page, "# DRA selection")
	if draAt < 0 || draAt < podapiAt {
		t.Fatalf("no DRA section after the pod API one:\n%s", page)
	}
	section := page[draAt:]
	for _, want := range []string{"`make conformance-dra`", "`DynamicResourceAllocation`", "| " + inFocus + " | passed | passed |"} {
		if !strings.Contains(section, want) {
			t.Errorf("DRA section lacks %q:\n%s", want, section)
		}
	}

	sec, err = loadFocusSelection(focus, filepath.Join(dir, "absent"), "", main)
	if err != nil || sec.results != nil {
		t.Fatalf("no column: err %v, results %+v", err, sec.results)
	}
	main.dra = sec
	if page := writePage(&main); !strings.Contains(page, "Not run yet: no results are kept for it (hack/conformance/results/dra). `make conformance-dra` runs it.") {
		t.Errorf("a DRA selection never run is not said:\n%s", page)
	}
}
