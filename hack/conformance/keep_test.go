package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A kept column reads back as the run it came from: the same results and provenance, the same
// pod errors, without the output the table does not read.
func TestKeptColumnReadsBackAsTheRun(t *testing.T) {
	run := t.TempDir()
	report, err := os.ReadFile("testdata/nodelet/report.json")
	if err != nil {
		t.Fatal(err)
	}
	// Captured output the suite writes into every spec report; the kept copy leaves it out.
	bloated := strings.Replace(string(report), `"LeafNodeType"`, `"CapturedGinkgoWriterOutput": "lots of output",
		"LeafNodeType"`, 1)
	files := map[string]string{"report.json": bloated, "run.json": mustFile(t, "testdata/nodelet/run.json"), "nodelet.log": mustFile(t, "testdata/nodelet.log") +
		"I1126 01:00:00.000000 1 sync.go:1] \"Synced\" pod=\"ns/quiet\"\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(run, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kept := filepath.Join(t.TempDir(), "results", "parallel", "nodelet")
	if err := keepColumn(run, kept); err != nil {
		t.Fatal(err)
	}
	raw := mustFile(t, filepath.Join(kept, "report.json"))
	if strings.Contains(raw, "CapturedGinkgoWriterOutput") {
		t.Error("the kept report still holds the captured output")
	}
	orig, back := mustRead(t, "testdata/nodelet/report.json"), mustRead(t, filepath.Join(kept, "report.json"))
	if !reflect.DeepEqual(orig.results, back.results) || !reflect.DeepEqual(orig.names, back.names) || !reflect.DeepEqual(orig.prov, back.prov) {
		t.Error("the kept column reads back differently from the run")
	}
	if got, want := podErrors(filepath.Join(kept, "nodelet.log")), podErrors("testdata/nodelet.log"); !reflect.DeepEqual(got, want) {
		t.Errorf("pod errors of the kept log %v, want %v", got, want)
	}
	if strings.Contains(mustFile(t, filepath.Join(kept, "nodelet.log")), "Synced") {
		t.Error("the kept log holds lines the report never reads")
	}
}

// A run someone stopped is not kept: the column kept before stays.
func TestAnInterruptedRunIsNotKept(t *testing.T) {
	run := t.TempDir()
	report := `[{"SuiteDescription":"E2eNode Suite","SpecialSuiteFailureReasons":["Interrupted by User"],"SpecReports":[]}]`
	if err := os.WriteFile(filepath.Join(run, "report.json"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(t.TempDir(), "kept")
	if err := keepColumn(run, kept); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("keepColumn of an interrupted run: %v", err)
	}
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("something was kept: %v", err)
	}
}

func mustFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
