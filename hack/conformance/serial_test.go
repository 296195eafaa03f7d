package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadSerialParts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serial.txt")
	writeTestFile(t, path, "# comment\n#- part 1: memory\n\\[sig-node\\] A ## first\n\\[sig-node\\] B\n\n#- part 2: disk\n\\[sig-node\\] C ## a note\n")
	parts, err := readSerialParts(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].number != 1 || parts[0].title != "memory" || parts[1].number != 2 {
		t.Fatalf("parts = %+v", parts)
	}
	if got := strings.Join(parts[0].focus, ","); got != `\[sig-node\] A,\[sig-node\] B` {
		t.Errorf("part 1 focus = %s", got)
	}
	if got := strings.Join(parts[1].focus, ","); got != `\[sig-node\] C` {
		t.Errorf("part 2 focus = %s (the note must be cut off)", got)
	}
	writeTestFile(t, path, "\\[sig-node\\] A\n#- part 1: late\n")
	if _, err := readSerialParts(path); err == nil || !strings.Contains(err.Error(), "before any") {
		t.Errorf("a spec line before the first part header: err = %v", err)
	}
}

// copyColumn puts a fixture column (report and provenance) under dir/SUBJECT.
func copyColumn(t *testing.T, from, dir, subject string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, subject), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "run.json"} {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, subject, f), string(data))
	}
}

// A part reads its own run when one is kept, else its specs out of a run of the whole
// selection; a part with neither is said to be not run.
func TestSerialPartsOwnRunWholeRunAndNotRun(t *testing.T) {
	dir := t.TempDir()
	copyColumn(t, "testdata/nodelet", filepath.Join(dir, "part-1"), "nodelet")
	copyColumn(t, "testdata/kubelet", filepath.Join(dir, "part-1"), "kubelet")
	copyColumn(t, "testdata/nodelet", dir, "nodelet") // the whole selection's run
	copyColumn(t, "testdata/kubelet", filepath.Join(dir, "part-2"), "kubelet")
	parts := []serialPart{
		{number: 1, title: "pods", focus: []string{`\[sig-node\] Pods`}},
		{number: 2, title: "hangs", focus: []string{`\[sig-node\] Hangs`}},
		{number: 3, title: "nothing", focus: []string{`\[sig-node\] Nothing`}},
	}
	main := report{generated: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	sections := loadSerialSections(dir, parts, main)
	if len(sections) != 3 {
		t.Fatalf("%d sections", len(sections))
	}
	if s := sections[0]; s.results == nil || len(s.whole) > 0 || len(s.results.upstream.names) == 0 {
		t.Fatalf("part 1 should come from its own run with both columns: %+v", s)
	}
	for _, name := range sections[0].results.nodelet.names {
		if !strings.HasPrefix(name, "[sig-node] Pods") {
			t.Errorf("part 1 holds %q, outside its focus", name)
		}
	}
	if s := sections[1]; s.results == nil || len(s.whole) != 1 || len(s.results.nodelet.names) != 2 || len(s.results.upstream.names) != 2 {
		t.Fatalf("part 2 should be the two Hangs specs, nodelet's of the whole run, the upstream kubelet's of its own: %+v", s)
	}
	if sections[2].results != nil {
		t.Errorf("part 3 matches no spec and should have no results")
	}

	n, u := mustRead(t, "testdata/nodelet/report.json"), mustRead(t, "testdata/kubelet/report.json")
	page := writePage(&report{nodelet: n, upstream: u, generated: main.generated, serial: sections})
	_, serial, ok := strings.Cut(page, "# Serial selection")
	if !ok {
		t.Fatalf("no serial section:\n%s", page)
	}
	for _, want := range []string{"Totals over the 2 of 3 parts", "## Part 1: pods", "### All specs",
		"## Part 2: hangs", "No run of this part alone is kept yet for nodelet:", "### Nodelet-only failures",
		"## Part 3: nothing", "Not run yet", "`make conformance-serial PART=3`"} {
		if !strings.Contains(serial, want) {
			t.Errorf("serial section lacks %q:\n%s", want, serial)
		}
	}
	_, part2, _ := strings.Cut(serial, "## Part 2")
	part2, _, _ = strings.Cut(part2, "## Part 3")
	if !strings.Contains(part2, "(nodelet: timed out, upstream: passed)") {
		t.Errorf("part 2 does not set nodelet's whole-run column against the upstream kubelet's part run:\n%s", part2)
	}
}

// The skip list under a selection names only the skips that concern its specs.
func TestSkipsListedWhereTheyApply(t *testing.T) {
	n, u := mustRead(t, "testdata/nodelet/report.json"), mustRead(t, "testdata/kubelet/report.json")
	rp := report{nodelet: n, upstream: u, skips: []skip{{`\[sig-node\] Images`, "no registry"}, {`\[sig-node\] Elsewhere`, "other selection"}}}
	used := rp.skipsUsed()
	if len(used) != 1 || used[0].reason != "no registry" {
		t.Errorf("skipsUsed = %v, want only the Images skip", used)
	}
}
