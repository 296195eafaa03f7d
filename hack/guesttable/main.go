// Command guesttable writes GUEST.md, the guest lane's side-by-side table: each in-guest test
// (test/guest/inguest) with its verdict against nodelet and against the upstream kubelet
// v1.33.4, both run in the same cgroup v2 guest by hack/guest.sh from one boot. It reads the
// two runs' `go test -json` events; hack/guest.sh runs it after every run of both.
//
//	go run ./hack/guesttable -nodelet results.json -kubelet results-kubelet.json -runlog run.log -o GUEST.md
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"strings"
	"time"
)

// verdict is one top-level test's outcome in one run.
type verdict struct {
	action  string // pass, fail, skip; empty: never finished
	elapsed float64
	lines   []string // what the test printed through t.Log, t.Error, t.Skip...
}

// run is one subject's results, by test name, and the names in the order they ran.
type run struct {
	order   []string
	results map[string]*verdict
}

var (
	// testLine matches a line a test printed ("    file_test.go:12: text").
	testLine = regexp.MustCompile(`^\s+\w+_test\.go:\d+: (.*)`)
	// failureLine tells a failure's message from a test's logging: the tests' errors say
	// what they wanted, testutil.WaitFor's that it timed out.
	failureLine = regexp.MustCompile(`want|timed out|exited|: [^:]*(error|fail)`)
)

func main() {
	nodeletPath := flag.String("nodelet", "", "nodelet's go test -json events")
	kubeletPath := flag.String("kubelet", "", "the upstream kubelet's go test -json events")
	runLog := flag.String("runlog", "", "the guest's run.log (its first line names the kernel)")
	out := flag.String("o", "GUEST.md", "the page to write")
	var m meta
	flag.StringVar(&m.checkout, "checkout", "", "what the guest's nodelet was built from, as the page words it (hack/guest.sh: \"commit HASH[+dirty]\")")
	flag.StringVar(&m.loadStart, "host-load", "", "the host's /proc/loadavg when the run started")
	flag.Parse()
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.loadEnd = loadAverages(string(b))
	}
	m.loadStart = loadAverages(m.loadStart)
	nodelet, err := readRun(*nodeletPath)
	if err != nil {
		log.Fatal(err)
	}
	kubelet, err := readRun(*kubeletPath)
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	write(f, nodelet, kubelet, guestLine(*runLog), m)
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

// readRun groups the events by top-level test; a subtest's output belongs to its parent.
func readRun(path string) (*run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &run{results: map[string]*verdict{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Action, Test, Output string
			Elapsed              float64
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		top, _, sub := strings.Cut(e.Test, "/")
		v := r.results[top]
		if v == nil {
			v = &verdict{}
			r.results[top] = v
			r.order = append(r.order, top)
		}
		switch {
		case e.Action == "output":
			if m := testLine.FindStringSubmatch(e.Output); m != nil {
				v.lines = append(v.lines, strings.TrimSpace(m[1]))
			}
		case !sub && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			v.action, v.elapsed = e.Action, e.Elapsed
		}
	}
	return r, sc.Err()
}

// note is why a test did not pass: a skip's reason (the last line it printed), a failure's
// first error.
func (v *verdict) note() string {
	switch {
	case v.action == "skip" && len(v.lines) > 0:
		return v.lines[len(v.lines)-1]
	case v.action == "fail":
		for _, l := range v.lines {
			if failureLine.MatchString(l) {
				return l
			}
		}
	}
	return ""
}

func (v *verdict) String() string {
	if v == nil {
		return "not run"
	}
	var s string
	switch v.action {
	case "pass":
		s = fmt.Sprintf("pass (%.0fs)", v.elapsed)
	case "fail":
		s = fmt.Sprintf("**fail** (%.0fs)", v.elapsed)
	case "skip":
		s = "skip"
	default:
		s = "**did not finish**"
	}
	if note := v.note(); note != "" {
		s += ": " + cell(note)
	}
	return s
}

// cell makes a note fit a table cell: one line, no pipes, at most 160 characters.
func cell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// guestLine is the first line of the guest's run.log: its kernel and cgroup filesystem.
func guestLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line, _, _ = strings.Cut(line, ", up ") // its uptime changes from run to run
	return strings.TrimPrefix(line, "guest: ")
}

// meta is what the page says of the run beside the guest's own line: the build, and how busy
// the host was (emulation makes every figure in the guest depend on it).
type meta struct {
	checkout           string
	loadStart, loadEnd string // the host's 1/5/15-minute load averages
}

// loadAverages keeps the three load averages of a /proc/loadavg line.
func loadAverages(line string) string {
	f := strings.Fields(line)
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func write(w io.Writer, nodelet, kubelet *run, guest string, m meta) {
	fmt.Fprintf(w, "# The guest lane: nodelet and the upstream kubelet side by side\n\n")
	fmt.Fprintf(w, "Generated by `hack/guesttable` from one run of `make guest` (`hack/guest.sh run`), %s; do not edit.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "The in-guest tests (`test/guest/inguest`) ran in one Debian bookworm guest under QEMU (%s),\n", guest)
	fmt.Fprintf(w, "on containerd 2, once against nodelet and once against the upstream kubelet v1.33.4 with the\n")
	fmt.Fprintf(w, "same flags and KubeletConfiguration (`GUEST_SUBJECT=kubelet`). A test asserting what only nodelet\n")
	fmt.Fprintf(w, "does is skipped for the kubelet with its reason. Only nodelet's column decides `make guest`.\n\n")
	if m.checkout != "" {
		fmt.Fprintf(w, "nodelet built from %s. ", m.checkout)
	}
	if m.loadStart != "" && m.loadEnd != "" {
		fmt.Fprintf(w, "The host's load average (1/5/15 min) was %s at the start and %s at the end; ", m.loadStart, m.loadEnd)
	}
	fmt.Fprintf(w, "times are the guest's wall clock under software emulation and grow with whatever else the host runs.\n\n")
	fmt.Fprintf(w, "| test | nodelet | upstream kubelet v1.33.4 |\n| --- | --- | --- |\n")
	names := nodelet.order
	for _, n := range kubelet.order {
		if nodelet.results[n] == nil {
			names = append(names, n)
		}
	}
	for _, n := range names {
		fmt.Fprintf(w, "| %s | %s | %s |\n", n, nodelet.results[n], kubelet.results[n])
	}
}
