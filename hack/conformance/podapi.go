package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// focusSection is a selection defined by a focus list, run in one directory per kubelet: the
// pod API selection (hack/conformance/podapi.txt) and the DRA selection (dra.txt). results is
// nil while neither kubelet's column has been run.
type focusSection struct {
	focus   []skip // the list's lines: a focus regex and what it covers
	results *report
	broken  []string // a column whose report holds none of its specs (a failed BeforeSuite): why
}

const podapiTitle = "\n# Pod API selection: native sidecars, in-place resize, user namespaces\n\n"

// loadFocusSelection reads a selection's focus list and the two columns' reports from their
// directories (DIR/report.json, DIR/run.json, DIR/nodelet.log). A column that was never run is
// empty; the page says so.
func loadFocusSelection(focusPath, nodeletDir, kubeletDir string, main report) (*focusSection, error) {
	focus, err := readSkips(focusPath) // the same "REGEX ## NOTE" lines
	if err != nil {
		return nil, err
	}
	sec := &focusSection{focus: focus}
	var patterns []string
	for _, f := range focus {
		patterns = append(patterns, f.pattern)
	}
	columns := make([]*run, 2)
	ran := false
	for i, dir := range []string{nodeletDir, kubeletDir} {
		columns[i] = emptyRun()
		if dir == "" {
			continue
		}
		// Both selections' label filter is !Flaky, the serial selection's; the focus does the rest.
		r, err := loadColumn(filepath.Join(dir, "report.json"), serialSelection)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			fmt.Fprintf(os.Stderr, "conformance: the selection of %s: %v\n", focusPath, err)
			sec.broken = append(sec.broken, fmt.Sprintf("%s: %v", []string{"nodelet", upstreamName}[i], err))
			continue
		}
		r.keepOnly(compileAll(patterns))
		r.explainSkips(main.skips)
		columns[i], ran = r, true
	}
	if ran {
		sec.results = &report{nodelet: columns[0], upstream: columns[1], skips: main.skips, causes: main.causes,
			podErrs: podErrors(filepath.Join(nodeletDir, "nodelet.log")), generated: main.generated}
	}
	return sec, nil
}

// writeBody is a focus selection below its introduction: the focus lines, then the columns in
// the shape of the parallel selection, or what has not been run yet.
func (sec *focusSection) writeBody(w *bufio.Writer, resultsDir, target string) {
	for _, f := range sec.focus {
		fmt.Fprintf(w, "- `%s`: %s\n", f.pattern, f.reason)
	}
	fmt.Fprintln(w)
	for _, b := range sec.broken {
		fmt.Fprintf(w, "A kept column has no result of these specs, %s.\n\n", b)
	}
	if sec.results == nil {
		fmt.Fprintf(w, "Not run yet: no results are kept for it (%s). `%s` runs it.\n", resultsDir, target)
		return
	}
	sec.results.runBy = target
	if len(sec.results.nodelet.names) == 0 {
		fmt.Fprintf(w, "There is no nodelet column yet: it has not been run, or its run did not produce results "+
			"(`SUBJECTS=nodelet %s` runs it).\n\n", target)
	}
	sec.results.writeBody(w)
}

// writePodAPI is the pod API selection: what it runs, then the columns in the shape of the
// parallel selection.
func (rp *report) writePodAPI(w *bufio.Writer) {
	fmt.Fprint(w, podapiTitle)
	fmt.Fprintf(w, "The upstream node suite's own specs for three pod features of Kubernetes 1.33 that the "+
		"parallel selection leaves out, since they carry a Feature, FeatureGate or Serial label: native sidecars "+
		"(restartable init containers), in-place pod resize and user namespaces. Focus below (from "+
		"hack/conformance/podapi.txt), label filter `!Flaky`; the specs run in parallel within three quarters of "+
		"TIMEOUT, then the `Serial` ones one at a time in what is left (they restart the kubelet through "+
		"hack/conformance/shim/systemctl, both kubelets alike); `make conformance-podapi` runs it against nodelet and the %s. The "+
		"NodeConformance `Containers Lifecycle` specs of plain init containers are in the parallel selection above.\n\n",
		upstreamName)
	rp.podapi.writeBody(w, "hack/conformance/results/podapi", "make conformance-podapi")
}
