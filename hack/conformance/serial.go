package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// serialPart is one part of the serial selection: the lines of serial.txt under a
// "#- part N: TITLE" header. A whole selection takes longer than a session has (about 2 h on
// nodelet and 3 h on the upstream kubelet here), so each part runs, and is kept, on its own.
type serialPart struct {
	number int
	title  string
	focus  []string // ginkgo --focus regexes, notes ("## ...") cut off
}

// partHeader is how serial.txt opens a part.
var partHeader = regexp.MustCompile(`^#- part (\d+): (.+)$`)

// readSerialParts parses serial.txt into its parts, in file order.
func readSerialParts(path string) ([]serialPart, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var parts []serialPart
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if m := partHeader.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			parts = append(parts, serialPart{number: n, title: m[2]})
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(parts) == 0 {
			return nil, fmt.Errorf("%s: %q comes before any \"#- part N: TITLE\" line", path, line)
		}
		focus, _, _ := strings.Cut(line, " ## ") // "## first" orders the run; it is not part of the regex
		p := &parts[len(parts)-1]
		p.focus = append(p.focus, strings.TrimSpace(focus))
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%s has no \"#- part N: TITLE\" line", path)
	}
	return parts, nil
}

// serialSection is one part of the serial selection on the page; results is nil while no
// run of the part is kept.
type serialSection struct {
	part    serialPart
	results *report
	whole   []string // the columns (nodelet, upstream kubelet) cut out of a run of the whole selection
}

// loadSerialSections reads each part's columns from dir. A column comes from dir/part-N/SUBJECT
// when a run of the part is kept there, else it is the part's specs out of a run of the whole
// selection in dir/SUBJECT (the shape before the selection was cut into parts).
func loadSerialSections(dir string, parts []serialPart, main report) []serialSection {
	var sections []serialSection
	for _, p := range parts {
		sec := serialSection{part: p}
		nodelet, nodeletDir, whole, err := loadPartColumn(dir, p, "nodelet")
		if err != nil {
			fmt.Fprintf(os.Stderr, "conformance: serial part %d: no nodelet results: %v\n", p.number, err)
			sections = append(sections, sec)
			continue
		}
		if whole {
			sec.whole = append(sec.whole, "nodelet")
		}
		upstream, _, whole, err := loadPartColumn(dir, p, "kubelet")
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "conformance: serial part %d: no upstream kubelet results: %v\n", p.number, err)
			upstream = emptyRun()
		case whole:
			sec.whole = append(sec.whole, "upstream kubelet")
		}
		nodelet.explainSkips(main.skips)
		upstream.explainSkips(main.skips)
		sec.results = &report{nodelet: nodelet, upstream: upstream, skips: main.skips, causes: main.causes,
			podErrs: podErrors(filepath.Join(nodeletDir, "nodelet.log")), generated: main.generated, heading: "###"}
		sections = append(sections, sec)
	}
	return sections
}

// loadPartColumn reads one kubelet's column of a part, keeping only the part's specs: from the
// part's own run when one is kept, else (whole) from the whole selection's run. It returns the
// directory the column came from.
func loadPartColumn(dir string, p serialPart, subject string) (r *run, from string, whole bool, err error) {
	from = filepath.Join(dir, fmt.Sprintf("part-%d", p.number), subject)
	if _, err := os.Stat(filepath.Join(from, "report.json")); err != nil {
		from, whole = filepath.Join(dir, subject), true
	}
	if r, err = loadColumn(filepath.Join(from, "report.json"), serialSelection); err != nil {
		return nil, "", false, err
	}
	r.keepOnly(compileAll(p.focus))
	if len(r.names) == 0 {
		return nil, "", false, fmt.Errorf("%s holds no spec of part %d", from, p.number)
	}
	return r, from, whole, nil
}

// writePartTotals is a selection's counts over the parts that have results.
func writePartTotals(w *bufio.Writer, sections []serialSection) {
	var n, u tally
	ran := 0
	for _, sec := range sections {
		if sec.results != nil {
			n, u = n.plus(sec.results.nodelet.counts()), u.plus(sec.results.upstream.counts())
			ran++
		}
	}
	fmt.Fprintf(w, "Totals over the %d of %d parts that have results:\n\n", ran, len(sections))
	writeTallies(w, n, u)
}

// writePartHead is a part's heading and focus list. A part without results says how to run it
// (make conformance-SELECTION) and writePartHead returns false: it has no body.
func writePartHead(w *bufio.Writer, sec serialSection, selection string) bool {
	fmt.Fprintf(w, "\n## Part %d: %s\n\n", sec.part.number, sec.part.title)
	for _, f := range sec.part.focus {
		fmt.Fprintf(w, "- `%s`\n", f)
	}
	fmt.Fprintln(w)
	if sec.results == nil {
		fmt.Fprintf(w, "Not run yet: no results are kept for it (hack/conformance/results/%s/part-%d). "+
			"`make conformance-%s PART=%d` runs it.\n", selection, sec.part.number, selection, sec.part.number)
		return false
	}
	return true
}

// keepOnly drops the specs no focus regex matches.
func (r *run) keepOnly(focus []*regexp.Regexp) {
	var names []string
	for _, name := range r.names {
		if matchesAny(focus, name) {
			names = append(names, name)
		} else {
			delete(r.results, name)
		}
	}
	r.names = names
}
