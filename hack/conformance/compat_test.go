package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The compatibility lane's columns of a selection are shown only once the page's columns ran on
// another runtime, and then list exactly the specs whose verdict differs on either kubelet.
func TestCompatLaneSection(t *testing.T) {
	dir, focus, main := focusedFixture(t, "\\[sig-node\\] Pods ## pods\n\\[sig-node\\] Hangs ## hangs\n")
	lane := filepath.Join(dir, "lane")
	for _, sel := range []string{"parallel", "podapi"} {
		copyColumn(t, "testdata/nodelet", filepath.Join(lane, sel), "nodelet")
		copyColumn(t, "testdata/kubelet", filepath.Join(lane, sel), "kubelet")
	}
	// On the lane, nodelet skipped the Pods spec the page's nodelet column passed.
	edit(t, filepath.Join(lane, "podapi", "nodelet", "report.json"), `"LeafNodeText": "should be submitted and removed", "State": "passed"`,
		`"LeafNodeText": "should be submitted and removed", "State": "skipped", "Failure": {"Message": "needs containerd 2"}`)
	o := options{podapiPath: focus}
	load := func() string {
		t.Helper()
		page := main
		sec, err := loadFocusSelection(focus, filepath.Join(dir, "nodelet"), filepath.Join(dir, "kubelet"), page)
		if err != nil {
			t.Fatal(err)
		}
		page.podapi = sec
		if err := page.attachCompat(lane, o); err != nil {
			t.Fatal(err)
		}
		return writePage(&page)
	}

	// The page's columns ran on the lane's runtime: they say everything, no lane section.
	if out := load(); strings.Contains(out, "On containerd 1.6") {
		t.Errorf("a lane section beside columns of the same runtime:\n%s", out)
	}

	// The page's columns now ran on containerd 2.
	for _, subject := range []string{"nodelet", "kubelet"} {
		edit(t, filepath.Join(dir, subject, "run.json"), `"runtime": "containerd 1.6.20"`, `"runtime": "containerd v2.4.2"`)
	}
	main.nodelet, main.upstream = mustRead(t, filepath.Join(dir, "nodelet", "report.json")), mustRead(t, filepath.Join(dir, "kubelet", "report.json"))
	out := load()
	_, podapi, ok := strings.Cut(out, "# Pod API selection")
	if !ok {
		t.Fatalf("no pod API section:\n%s", out)
	}
	_, laneSec, ok := strings.Cut(podapi, "## On containerd 1.6 (the compatibility lane)")
	if !ok {
		t.Fatalf("the pod API selection has no lane section:\n%s", podapi)
	}
	laneSec, _, _ = strings.Cut(laneSec, "## All specs")
	for _, want := range []string{"nodelet from invocation 20260101T000000Z-1 at 0123456789ab on containerd 1.6.20",
		"The one spec whose verdict differs from the columns above",
		"| spec | nodelet, containerd 1.6.20 | nodelet, containerd v2.4.2 | upstream, containerd 1.6.20 | upstream, containerd v2.4.2 | message on the lane |",
		"| [sig-node] Pods should be submitted and removed | skipped | passed | passed | passed | nodelet: needs containerd 2 |"} {
		if !strings.Contains(laneSec, want) {
			t.Errorf("lane section lacks %q:\n%s", want, laneSec)
		}
	}
	if strings.Contains(laneSec, "Hangs") {
		t.Errorf("a spec with the same verdicts is listed:\n%s", laneSec)
	}
	// The parallel selection's lane columns hold the same verdicts as the page's.
	parallel, _, _ := strings.Cut(out, "# Pod API selection")
	if !strings.Contains(parallel, "Every spec had the same verdict there as in the columns above, on both kubelets.") {
		t.Errorf("the parallel selection does not say its lane columns agree:\n%s", parallel)
	}
}

// edit replaces old (which must be there) with new in the file at path.
func edit(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s lacks %q", path, old)
	}
	writeTestFile(t, path, strings.Replace(string(data), old, new, 1))
}

// A FOCUS page's part 0 is not one the lane ran: only the lane's kept parts are read.
func TestLanePartsAreTheKeptOnes(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "part-2", "nodelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := laneParts(dir, []serialPart{{number: 0}, {number: 1}, {number: 2}})
	if len(got) != 1 || got[0].number != 2 {
		t.Errorf("laneParts = %+v, want part 2 only", got)
	}
}
