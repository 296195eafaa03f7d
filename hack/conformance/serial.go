package main

import (
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
	whole   bool // the columns come from a run of the whole selection, cut to this part's specs
}

// loadSerialSections reads each part's columns from dir: dir/part-N/SUBJECT when a run of the
// part is kept there, else the part's specs out of a run of the whole selection in
// dir/SUBJECT (the shape before the selection was cut into parts), else nothing.
func loadSerialSections(dir string, parts []serialPart, main report) []serialSection {
	var sections []serialSection
	for _, p := range parts {
		sec := serialSection{part: p}
		partDir := filepath.Join(dir, fmt.Sprintf("part-%d", p.number))
		if _, err := os.Stat(filepath.Join(partDir, "nodelet", "report.json")); err != nil {
			partDir, sec.whole = dir, true
		}
		nodelet, err := loadPartColumn(filepath.Join(partDir, "nodelet", "report.json"), p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "conformance: serial part %d: no nodelet results: %v\n", p.number, err)
			sections = append(sections, serialSection{part: p})
			continue
		}
		upstream, err := loadPartColumn(filepath.Join(partDir, "kubelet", "report.json"), p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "conformance: serial part %d: no upstream kubelet results: %v\n", p.number, err)
			upstream = emptyRun()
		}
		nodelet.explainSkips(main.skips)
		upstream.explainSkips(main.skips)
		sec.results = &report{nodelet: nodelet, upstream: upstream, skips: main.skips, causes: main.causes,
			podErrs: podErrors(filepath.Join(partDir, "nodelet", "nodelet.log")), generated: main.generated, heading: "###"}
		sections = append(sections, sec)
	}
	return sections
}

// loadPartColumn reads one kubelet's column of a part, keeping only the part's specs.
func loadPartColumn(reportPath string, p serialPart) (*run, error) {
	r, err := loadColumn(reportPath, serialSelection)
	if err != nil {
		return nil, err
	}
	r.keepOnly(compileAll(p.focus))
	if len(r.names) == 0 {
		return nil, fmt.Errorf("%s holds no spec of part %d", reportPath, p.number)
	}
	return r, nil
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
