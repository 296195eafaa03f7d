package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The pod API section keeps only its focus's specs, names its focus lines with their notes,
// stands a missing nodelet column beside the upstream kubelet's, and says when nothing was run.
func TestPodAPISection(t *testing.T) {
	dir, focus, main := focusedFixture(t, "# comment\n\\[sig-node\\] Hangs ## specs that hang\n\\[sig-node\\] Pods should ## pods\n")

	sec, err := loadFocusSelection(focus, filepath.Join(dir, "nodelet"), filepath.Join(dir, "kubelet"), main)
	if err != nil {
		t.Fatal(err)
	}
	if sec.results == nil || len(sec.results.nodelet.names) != 3 || len(sec.results.upstream.names) != 3 {
		t.Fatalf("want the two Hangs specs and the Pods one in both columns: %+v", sec.results)
	}
	main.podapi = sec
	page := writePage(&main)
	_, section, ok := strings.Cut(page, "# Pod API selection")
	if !ok {
		t.Fatalf("no pod API section:\n%s", page)
	}
	for _, want := range []string{"- `\\[sig-node\\] Hangs`: specs that hang", "## Where each column came from",
		"## Nodelet-only failures", "(nodelet: timed out, upstream: passed)", "## All specs",
		"| [sig-node] Pods should be submitted and removed | passed | passed |"} {
		if !strings.Contains(section, want) {
			t.Errorf("pod API section lacks %q:\n%s", want, section)
		}
	}
	if _, table, _ := strings.Cut(section, "## All specs"); strings.Contains(table, "ConfigMap") {
		t.Errorf("pod API section holds a spec outside its focus:\n%s", section)
	}

	// Only the upstream kubelet's column has been run.
	sec, err = loadFocusSelection(focus, filepath.Join(dir, "absent"), filepath.Join(dir, "kubelet"), main)
	if err != nil || sec.results == nil || len(sec.results.nodelet.names) != 0 || len(sec.results.upstream.names) != 3 {
		t.Fatalf("upstream column only: err %v, %+v", err, sec.results)
	}
	main.podapi = sec
	if page := writePage(&main); !strings.Contains(page, "There is no nodelet column yet") {
		t.Errorf("a missing nodelet column is not said:\n%s", page)
	}

	// Neither.
	sec, err = loadFocusSelection(focus, filepath.Join(dir, "absent"), "", main)
	if err != nil || sec.results != nil {
		t.Fatalf("no column: err %v, results %+v", err, sec.results)
	}
	main.podapi = sec
	if page := writePage(&main); !strings.Contains(page, "Not run yet") {
		t.Errorf("a selection never run is not said:\n%s", page)
	}
}

// focusedFixture is a directory holding the focus list focusText (focus.txt) and the testdata
// columns as dir/nodelet and dir/kubelet, and the page they go on.
func focusedFixture(t *testing.T, focusText string) (dir, focus string, main report) {
	t.Helper()
	dir = t.TempDir()
	focus = filepath.Join(dir, "focus.txt")
	writeTestFile(t, focus, focusText)
	copyColumn(t, "testdata/nodelet", dir, "nodelet")
	copyColumn(t, "testdata/kubelet", dir, "kubelet")
	n, u := mustRead(t, "testdata/nodelet/report.json"), mustRead(t, "testdata/kubelet/report.json")
	return dir, focus, report{nodelet: n, upstream: u, generated: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// The pod API selection's column is two ginkgo runs with one focus and complementary label
// filters: each run lists the other's specs as skipped, which must not hide their results.
func TestRunsOfOneColumnDoNotHideEachOther(t *testing.T) {
	const serialSpec, parallelSpec = "[sig-node] [Serial] Restarts the kubelet", "[sig-node] Sidecar runs"
	spec := func(text, state, msg string) string {
		failure := ""
		if msg != "" {
			failure = `, "Failure": {"Message": "` + msg + `"}`
		}
		return `{"ContainerHierarchyTexts": ["[sig-node]"], "LeafNodeType": "It", "LeafNodeText": "` +
			strings.TrimPrefix(text, "[sig-node] ") + `", "State": "` + state + `"` + failure + `}`
	}
	parallelRun := `{"SpecReports": [` + spec(parallelSpec, "failed", "boom") + `, ` + spec(serialSpec, "skipped", "") + `]}`
	serialRun := `{"SpecReports": [` + spec(parallelSpec, "skipped", "") + `, ` + spec(serialSpec, "passed", "") + `]}`
	for _, order := range [][2]string{{parallelRun, serialRun}, {serialRun, parallelRun}} {
		path := filepath.Join(t.TempDir(), "report.json")
		writeTestFile(t, path, "["+order[0]+", "+order[1]+"]")
		r, err := readRun(path, serialSelection)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.results[parallelSpec].state; got != stateFailed {
			t.Errorf("%s: %s, want failed", parallelSpec, got)
		}
		if got := r.results[serialSpec].state; got != statePassed {
			t.Errorf("%s: %s, want passed", serialSpec, got)
		}
		if len(r.names) != 2 {
			t.Errorf("names = %v, want each spec once", r.names)
		}
	}
}
