package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The compatibility lane (containerd 1.6, CONTAINERD_INSTANCE=containerd16) keeps its columns in
// hack/conformance/results-containerd16, in the shape of hack/conformance/results. Where a
// selection's columns on the page ran on another runtime, the page keeps the lane's columns as a
// section of their own: their counts, where they came from and every spec whose verdict differs.

// attachCompat reads the lane's columns of each selection on the page from dir and hangs them on
// that selection's report.
func (rp *report) attachCompat(dir string, o options) error {
	columns := [2]*run{emptyRun(), emptyRun()}
	for i, subject := range []string{"nodelet", "kubelet"} {
		r, err := loadColumn(filepath.Join(dir, "parallel", subject, "report.json"), parallelSelection)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			fmt.Fprintf(os.Stderr, "conformance: the compatibility lane's parallel %s column: %v\n", subject, err)
		default:
			r.explainSkips(rp.skips)
			columns[i] = r
		}
	}
	rp.compat = &report{nodelet: columns[0], upstream: columns[1]}
	for _, f := range []struct {
		sec        *focusSection
		name, list string
	}{{rp.podapi, "podapi", o.podapiPath}, {rp.dra, "dra", o.draPath}} {
		if f.sec == nil || f.sec.results == nil {
			continue
		}
		lane, err := loadFocusSelection(f.list, filepath.Join(dir, f.name, "nodelet"), filepath.Join(dir, f.name, "kubelet"), *rp)
		if err != nil {
			return err
		}
		f.sec.results.compat = lane.results
	}
	if len(rp.serial) > 0 {
		parts, err := readSerialParts(o.serialPath)
		if err != nil {
			return err
		}
		laneDir := filepath.Join(dir, "serial")
		attachParts(rp.serial, loadSerialSections(laneDir, laneParts(laneDir, parts), *rp))
	}
	if len(rp.resources) > 0 {
		parts, err := readSerialParts(o.resourcesPath)
		if err != nil {
			return err
		}
		laneDir := filepath.Join(dir, "resources")
		attachParts(rp.resources, loadResourceSections(laneDir, laneParts(laneDir, parts), *rp))
	}
	return nil
}

// laneParts is the parts the lane has a run of in dir: a FOCUS page's part 0 has none, and
// is not looked for.
func laneParts(dir string, parts []serialPart) []serialPart {
	var kept []serialPart
	for _, p := range parts {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("part-%d", p.number))); err == nil {
			kept = append(kept, p)
		}
	}
	return kept
}

// attachParts gives each part on the page the lane's columns of the same part.
func attachParts(sections, lane []serialSection) {
	for i := range sections {
		for _, l := range lane {
			if l.part.number == sections[i].part.number && sections[i].results != nil {
				sections[i].results.compat = l.results
			}
		}
	}
}

// compatShown reports whether the page shows the lane's columns for this selection: the lane
// has run it, and a column on the page ran on another runtime than the lane's column of the
// same kubelet (while the page's columns are themselves from the lane's runtime, they say all).
func (rp *report) compatShown() bool {
	c := rp.compat
	if c == nil || (len(c.nodelet.names) == 0 && len(c.upstream.names) == 0) {
		return false
	}
	for _, pair := range [][2]*run{{rp.nodelet, c.nodelet}, {rp.upstream, c.upstream}} {
		if len(pair[0].names) > 0 && len(pair[1].names) > 0 && runtimeOf(pair[0]) != runtimeOf(pair[1]) {
			return true
		}
	}
	return false
}

func runtimeOf(r *run) string {
	if r.prov == nil || r.prov.Runtime == "" {
		return "an unrecorded runtime"
	}
	return r.prov.Runtime
}

// writeCompat is the lane's section of a selection: its counts, its runs, and the specs whose
// verdict on either kubelet differs from the page's columns.
func (rp *report) writeCompat(w *bufio.Writer) {
	if !rp.compatShown() {
		return
	}
	c := rp.compat
	fmt.Fprintf(w, "\n%s On containerd 1.6 (the compatibility lane)\n\n", rp.h())
	fmt.Fprintf(w, "The last run of this selection on the compatibility lane's runtime "+
		"(`CONTAINERD_INSTANCE=containerd16`, columns kept in hack/conformance/results-containerd16): %s.\n\n",
		strings.Join([]string{laneRun("nodelet", c.nodelet), laneRun(upstreamName, c.upstream)}, "; "))
	writeTallies(w, c.nodelet.counts(), c.upstream.counts())
	var rows []string
	for _, name := range mergeNames(rp.nodelet, rp.upstream, c.nodelet, c.upstream) {
		cells := []string{state(c.nodelet, name), state(rp.nodelet, name), state(c.upstream, name), state(rp.upstream, name)}
		if cells[0] != cells[1] || cells[2] != cells[3] {
			rows = append(rows, fmt.Sprintf("| %s | %s | %s |\n", cell(name), strings.Join(cells, " | "),
				cell(laneMessages(c, name))))
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(w, "\nEvery spec had the same verdict there as in the columns above, on both kubelets.\n")
		return
	}
	what := fmt.Sprintf("The %d specs whose verdict differs", len(rows))
	if len(rows) == 1 {
		what = "The one spec whose verdict differs"
	}
	fmt.Fprintf(w, "\n%s from the columns above (— : not in that column's run):\n\n"+
		"| spec | nodelet, %s | nodelet, %s | upstream, %s | upstream, %s | message on the lane |\n"+
		"| --- | --- | --- | --- | --- | --- |\n",
		what, runtimeOf(c.nodelet), runtimeOf(rp.nodelet), runtimeOf(c.upstream), runtimeOf(rp.upstream))
	for _, row := range rows {
		fmt.Fprint(w, row)
	}
}

// laneRun names the run a lane column came from.
func laneRun(kubelet string, r *run) string {
	if len(r.names) == 0 {
		return kubelet + " not run"
	}
	if r.prov == nil {
		return kubelet + " from an unrecorded run"
	}
	return fmt.Sprintf("%s from invocation %s at %s on %s", kubelet, r.prov.Invocation,
		shortCommit(r.prov.Checkout), runtimeOf(r))
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return or(c, "an unrecorded commit")
}

// laneMessages is what the lane's columns say of a spec they did not pass: a skip's reason or a
// failure's message, each kubelet's when they differ.
func laneMessages(c *report, name string) string {
	n, u := c.nodelet.results[name].message, c.upstream.results[name].message
	switch {
	case n == u:
		return n
	case n == "":
		return "upstream kubelet: " + u
	case u == "":
		return "nodelet: " + n
	}
	return "nodelet: " + n + "; upstream kubelet: " + u
}
