package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeEvents(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.TrimSpace(content)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTable sets two runs side by side: verdicts, times, a skip's reason, a failure's error
// rather than the test's logging, and a test only one run had.
func TestTable(t *testing.T) {
	nodelet := writeEvents(t, "n.json", `
{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"    a_test.go:10: memory.available now 3000 MiB\n"}
{"Action":"pass","Test":"TestA","Elapsed":12.4}
{"Action":"run","Test":"TestB"}
{"Action":"output","Test":"TestB/sub","Output":"    b_test.go:3: started\n"}
{"Action":"pass","Test":"TestB/sub","Elapsed":1}
{"Action":"pass","Test":"TestB","Elapsed":3}
`)
	kubelet := writeEvents(t, "k.json", `
{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"    a_test.go:10: memory.available now 3000 MiB\n"}
{"Action":"output","Test":"TestA","Output":"    a_test.go:20: the hog's status: reason \"\", want Evicted | x\n"}
{"Action":"fail","Test":"TestA","Elapsed":40}
{"Action":"run","Test":"TestB"}
{"Action":"output","Test":"TestB","Output":"    framework_test.go:50: nodelet-only: reads nodelet's log\n"}
{"Action":"skip","Test":"TestB","Elapsed":0}
{"Action":"run","Test":"TestC"}
`)
	n, err := readRun(nodelet)
	if err != nil {
		t.Fatal(err)
	}
	k, err := readRun(kubelet)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	write(&b, n, k, "6.1.0-41-amd64, cgroup2fs on /sys/fs/cgroup", meta{checkout: "abc123def456", loadStart: "0.10 0.20 0.30", loadEnd: "2.00 1.50 1.00"})
	got := b.String()
	for _, want := range []string{
		`| TestA | pass (12s) | **fail** (40s): the hog's status: reason "", want Evicted \| x |`,
		`| TestB | pass (3s) | skip: nodelet-only: reads nodelet's log |`,
		`| TestC | not run | **did not finish** |`,
		"(6.1.0-41-amd64, cgroup2fs on /sys/fs/cgroup)",
		"nodelet built from abc123def456. The host's load average (1/5/15 min) was 0.10 0.20 0.30 at the start and 2.00 1.50 1.00 at the end;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}

func TestLoadAverages(t *testing.T) {
	if got := loadAverages("0.52 1.13 0.98 1/374 3924\n"); got != "0.52 1.13 0.98" {
		t.Errorf("loadAverages of a /proc/loadavg line: %q", got)
	}
	if got := loadAverages(""); got != "" {
		t.Errorf("loadAverages of nothing: %q", got)
	}
}
