package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// resourcesSpec is one spec of a fixture ginkgo report; labels become the spec's own labels.
func resourcesSpec(text, state, msg string, labels ...string) string {
	failure := ""
	if msg != "" {
		failure = fmt.Sprintf(`, "Failure": {"Message": %q}`, msg)
	}
	quoted := make([]string, len(labels))
	for i, l := range labels {
		quoted[i] = fmt.Sprintf("%q", l)
	}
	return fmt.Sprintf(`{"ContainerHierarchyTexts": ["[sig-node]"], "LeafNodeType": "It", "LeafNodeText": %q, "LeafNodeLabels": [%s], "State": %q%s}`,
		strings.TrimPrefix(text, "[sig-node] "), strings.Join(quoted, ", "), state, failure)
}

// writeResourcesColumn writes a one-run report of specs as dir/part-N/SUBJECT/report.json.
// The run skipped the CDI spec by --skip, as skips.txt says.
func writeResourcesColumn(t *testing.T, dir string, part int, subject string, specs ...string) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("part-%d", part), subject, "report.json")
	writeTestFile(t, path, `[{"SuiteDescription": "E2eNode Suite", "SuiteConfig": {"SkipStrings": ["can make a CDI device accessible"]}, `+
		`"SpecReports": [`+strings.Join(specs, ", ")+`]}]`)
}

const (
	cpuSpec     = "[sig-node] CPU Manager [Serial] should assign CPUs as expected based on the Pod spec"
	smtSpec     = "[sig-node] CPU Manager [Serial] should assign CPUs as expected based on strict SMT alignment"
	cdiSpec     = "[sig-node] Device Plugin [Serial] can make a CDI device accessible in a container"
	flakySpec   = "[sig-node] POD Resources [Serial] without SRIOV devices in the system [Flaky] should return the expected responses"
	allocSpec   = "[sig-node] POD Resources [Serial] with CPU manager Static policy should return the expected responses"
	unawareSpec = "[sig-node] POD Resources [Serial] with a topology-unaware device plugin should return proper podresources"
	outsideSpec = "[sig-node] Pods should be submitted and removed"
)

// A part with only the upstream kubelet's column is shown (its column runs first); Flaky specs
// count (no label filter); each skipped spec is named with the suite's reason or skips.txt's, and
// a reason that differs between the kubelets is given for each; a part never run says so.
func TestResourcesSection(t *testing.T) {
	dir := t.TempDir()
	writeResourcesColumn(t, dir, 1, "kubelet",
		resourcesSpec(cpuSpec, "skipped", "Skipping rest of the CPU Manager tests since CPU capacity < 3", "Serial"),
		resourcesSpec(smtSpec, "skipped", "Skipping CPU Manager option=full-pcpus-only tests since SMT disabled", "Serial"),
		resourcesSpec(outsideSpec, "passed", ""))
	writeResourcesColumn(t, dir, 2, "kubelet",
		resourcesSpec(flakySpec, "passed", "", "Serial", "Flaky"),
		resourcesSpec(cdiSpec, "skipped", "", "Serial"),
		resourcesSpec(allocSpec, "skipped", "Skipping CPU Manager tests since the CPU allocatable < 4", "Serial"),
		resourcesSpec(unawareSpec, "skipped", "Skipping CPU Manager tests since the CPU allocatable < 4", "Serial"))
	writeResourcesColumn(t, dir, 2, "nodelet",
		resourcesSpec(unawareSpec, "passed", "", "Serial"),
		resourcesSpec(flakySpec, "failed", "rpc error: code = Unavailable", "Serial", "Flaky"),
		resourcesSpec(cdiSpec, "skipped", "", "Serial"),
		resourcesSpec(allocSpec, "skipped", "Skipping CPU Manager tests since the CPU allocatable < 3", "Serial"))
	parts := []serialPart{
		{number: 1, title: "cpu", focus: []string{`\[sig-node\] CPU Manager \[Serial\]`}},
		{number: 2, title: "pod resources", focus: []string{`\[sig-node\] POD Resources`, `\[sig-node\] Device Plugin \[Serial\]`}},
		{number: 3, title: "devices", focus: []string{`\[sig-node\] Device Manager`}},
	}
	main := report{nodelet: emptyRun(), upstream: emptyRun(), skips: []skip{{`can make a CDI device accessible`, "no CDI in containerd 1.6"}},
		generated: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	sections := loadResourceSections(dir, parts, main)
	if len(sections) != 3 {
		t.Fatalf("%d sections, want 3", len(sections))
	}
	if s := sections[0].results; s == nil || len(s.nodelet.names) != 0 || len(s.upstream.names) != 2 {
		t.Fatalf("part 1: want the upstream column alone, its two CPU Manager specs: %+v", s)
	}
	if got := sections[1].results.nodelet.results[flakySpec].state; got != stateFailed {
		t.Errorf("a Flaky-labelled spec is %q in nodelet's column, want failed (no label filter)", got)
	}
	if sections[2].results != nil {
		t.Errorf("part 3 was never run and should have no results")
	}

	main.resources = sections
	page := writePage(&main)
	_, sec, ok := strings.Cut(page, "# Resources selection")
	if !ok {
		t.Fatalf("no resources section:\n%s", page)
	}
	_, cannot, _ := strings.Cut(sec, "## Specs this machine cannot run")
	cannot, _, _ = strings.Cut(cannot, "## Part 1")
	for _, want := range []string{
		"5 specs:",
		"- " + unawareSpec + ": upstream kubelet only (nodelet: passed): Skipping CPU Manager tests since the CPU allocatable < 4",
		"- " + smtSpec + ": Skipping CPU Manager option=full-pcpus-only tests since SMT disabled",
		"- " + cpuSpec + ": Skipping rest of the CPU Manager tests since CPU capacity < 3",
		"- " + cdiSpec + ": skips.txt: no CDI in containerd 1.6",
		"- " + allocSpec + ": upstream kubelet: Skipping CPU Manager tests since the CPU allocatable < 4; nodelet: Skipping CPU Manager tests since the CPU allocatable < 3",
	} {
		if !strings.Contains(cannot, want) {
			t.Errorf("the cannot-run list lacks %q:\n%s", want, cannot)
		}
	}
	if strings.Contains(cannot, flakySpec) || strings.Contains(sec, outsideSpec) {
		t.Errorf("a spec that ran, or one outside the focus, is listed:\n%s", sec)
	}
	for _, want := range []string{"Totals over the 2 of 3 parts", "## Part 1: cpu", "There is no nodelet column yet",
		"`SUBJECTS=nodelet make conformance-resources PART=1`", "## Part 2: pod resources", "### Nodelet-only failures",
		"## Part 3: devices", "Not run yet", "`make conformance-resources PART=3`"} {
		if !strings.Contains(sec, want) {
			t.Errorf("resources section lacks %q:\n%s", want, sec)
		}
	}
}
