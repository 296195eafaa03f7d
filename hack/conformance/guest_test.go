package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The guest selection is the page's last section: its title, its focus lines with their notes,
// then both columns of its kept results; never run, it says how to run it.
func TestGuestSection(t *testing.T) {
	dir, focus, main := focusedFixture(t, "# comment\n\\[sig-node\\] Pods should ## pods on cgroup v2\n")
	for _, subject := range []string{"nodelet", "kubelet"} {
		writeTestFile(t, filepath.Join(dir, subject, "run.json"), `{"invocation": "guest-1", "subject": "`+subject+`"}`)
	}

	sec, err := loadFocusSelection(focus, filepath.Join(dir, "nodelet"), filepath.Join(dir, "kubelet"), main)
	if err != nil {
		t.Fatal(err)
	}
	main.guest = sec
	page := writePage(&main)
	_, section, ok := strings.Cut(page, "# Guest selection: cgroup v2 and the systemd driver")
	if !ok {
		t.Fatalf("no guest section:\n%s", page)
	}
	for _, want := range []string{"`make guest-conformance`", "- `\\[sig-node\\] Pods should`: pods on cgroup v2",
		"## Where each column came from", "## All specs", "| [sig-node] Pods should be submitted and removed | passed | passed |",
		"Both columns come from one `make guest-conformance` invocation (guest-1)."} {
		if !strings.Contains(section, want) {
			t.Errorf("guest section lacks %q:\n%s", want, section)
		}
	}
	if _, table, _ := strings.Cut(section, "## All specs"); strings.Contains(table, "Hangs") {
		t.Errorf("guest section holds a spec outside its focus:\n%s", section)
	}

	main.guest, err = loadFocusSelection(focus, filepath.Join(dir, "absent"), filepath.Join(dir, "absent"), main)
	if err != nil {
		t.Fatal(err)
	}
	if page := writePage(&main); !strings.Contains(page, "Not run yet: no results are kept for it (hack/conformance/results/guest)") {
		t.Errorf("a guest selection never run is not said:\n%s", page)
	}

	// A run whose BeforeSuite failed reports no spec at all: the page says so, not "not run yet".
	writeTestFile(t, filepath.Join(dir, "nodelet", "report.json"),
		`[{"SpecReports": [{"LeafNodeType": "SynchronizedBeforeSuite", "State": "failed"}]}]`)
	main.guest, err = loadFocusSelection(focus, filepath.Join(dir, "nodelet"), filepath.Join(dir, "absent"), main)
	if err != nil {
		t.Fatal(err)
	}
	if page := writePage(&main); !strings.Contains(page, "A kept column has no result of these specs, nodelet: ") {
		t.Errorf("a column whose suite did not start is not said:\n%s", page)
	}
}
