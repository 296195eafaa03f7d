package main

import (
	"bufio"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// report is CONFORMANCE.md: two columns (nodelet, upstream kubelet) and what they came from,
// then the serial, pod API, resources and DRA selections in the same shape.
type report struct {
	nodelet, upstream *run
	skips             []skip
	causes            []cause
	podErrs           map[string]string
	generated         time.Time
	serial            []serialSection // the second selection, part by part
	podapi            *focusSection   // the third selection
	resources         []serialSection // the fourth, part by part
	dra               *focusSection   // the fifth
	guest             *focusSection   // the cgroup v2 and systemd specs, run in the QEMU guest
	heading           string          // the level of the sections below the title: "##" when empty
	runBy             string          // the make target whose invocations made the columns: "make conformance" when empty
	compat            *report         // this selection's columns on the compatibility lane's containerd 1.6 (compat.go)
}

const upstreamName = "upstream kubelet v1.33.4"

const serialTitle = "\n# Serial selection: the managers that keep a node alive\n\n"

func (rp *report) write(w *bufio.Writer) {
	fmt.Fprintf(w, "# Node conformance\n\n")
	fmt.Fprintf(w, "The [NodeConformance] specs of the upstream node e2e suite (`k8s.io/kubernetes v1.33.4`, "+
		"`test/e2e_node`), label filter `NodeConformance && !Serial && !Flaky && !Feature && !Disruptive`, "+
		"run by `make conformance` on the local control plane against nodelet and the %s. "+
		"Generated %s.\n\n", upstreamName, rp.generated.Format("2006-01-02 15:04 MST"))
	rp.writeBody(w)
	if len(rp.serial) > 0 {
		rp.writeSerial(w)
	}
	if rp.podapi != nil {
		rp.writePodAPI(w)
	}
	if len(rp.resources) > 0 {
		rp.writeResources(w)
	}
	if rp.dra != nil {
		rp.writeDRA(w)
	}
	if rp.guest != nil {
		rp.writeGuest(w)
	}
}

// writeSerial is the serial selection: its totals, then each part in the shape of the
// selection above.
func (rp *report) writeSerial(w *bufio.Writer) {
	fmt.Fprint(w, serialTitle)
	fmt.Fprintf(w, "The upstream node suite's own specs for eviction, garbage collection, the OOM killer, node "+
		"allocatable enforcement, the Summary API, seccomp default, pod overhead, RuntimeClass handlers, lock "+
		"contention and graceful node shutdown (label filter `!Flaky`, focus below, from "+
		"hack/conformance/serial.txt), run one at a time, against nodelet and the %s. "+
		"The specs change the kubelet's configuration by writing `kubelet-config` and restarting \"the kubelet "+
		"service\"; with no systemd here, hack/conformance/shim/systemctl restarts whichever kubelet is under test "+
		"on that file, both alike, and test/fakelogind stands in for systemd-logind on a private system bus "+
		"(both kubelets and the suite use it). The whole selection takes longer than one sitting (hours, most of it "+
		"the eviction specs waiting for pressure to come and go), so it is cut into parts, each run and kept on its "+
		"own (`make conformance-serial PART=N`, both kubelets in one invocation); each part says where its columns "+
		"came from.\n\n", upstreamName)
	writePartTotals(w, rp.serial)
	for _, sec := range rp.serial {
		if !writePartHead(w, sec, "serial") {
			continue
		}
		if len(sec.whole) > 0 {
			fmt.Fprintf(w, "No run of this part alone is kept yet for %s: that column is this part's specs out of a "+
				"run of the whole selection (hack/conformance/results/serial/SUBJECT), whose budget may have ended "+
				"before it reached them (\"not run\").\n\n", strings.Join(sec.whole, " and "))
		}
		sec.results.writeBody(w)
	}
}

// writeBody is everything of one selection below its title.
func (rp *report) writeBody(w *bufio.Writer) {
	if s := rp.setupSentence(); s != "" {
		fmt.Fprintf(w, "%s\n\n", s)
	}
	rp.writeCounts(w)
	rp.writeProvenance(w)
	if skips := rp.skipsUsed(); len(skips) > 0 {
		fmt.Fprintf(w, "\nSkipped on purpose (hack/conformance/skips.txt), what this machine cannot give:\n\n")
		for _, s := range skips {
			fmt.Fprintf(w, "- `%s`: %s\n", s.pattern, s.reason)
		}
	}
	rp.writeFailures(w)
	rp.writeCompat(w)
	fmt.Fprintf(w, "\n%s All specs\n\n| spec | nodelet | upstream kubelet |\n| --- | --- | --- |\n", rp.h())
	for _, name := range mergeNames(rp.nodelet, rp.upstream) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", cell(name), state(rp.nodelet, name), state(rp.upstream, name))
	}
}

// setupSentence says whether the columns are comparable: one invocation or not, the same
// TIMEOUT and FOCUS, and the same machine, runtime and images only when the records say so.
func (rp *report) setupSentence() string {
	n, u := rp.nodelet.prov, rp.upstream.prov
	if len(rp.upstream.names) == 0 {
		return "There is no upstream kubelet column: it has not been run, or its run did not produce results."
	}
	if len(rp.nodelet.names) == 0 {
		return "" // a selection whose nodelet column is still to be run says so itself
	}
	runBy := rp.runBy
	if runBy == "" {
		runBy = "make conformance"
	}
	var notes []string
	switch {
	case n == nil || u == nil:
		notes = append(notes, "A column has no record of its run (run.json): which build, images and budget it had is unknown.")
	case n.Invocation == u.Invocation:
		notes = append(notes, fmt.Sprintf("Both columns come from one `%s` invocation (%s).", runBy, n.Invocation))
	default:
		notes = append(notes, fmt.Sprintf("The columns come from different `%s` invocations: "+
			"nodelet's from %s (started %s), the upstream kubelet's from %s (started %s).", runBy,
			n.Invocation, n.Started.Format(time.DateTime), u.Invocation, u.Started.Format(time.DateTime)))
	}
	if n != nil && u != nil && (n.Timeout != u.Timeout || n.Focus != u.Focus) {
		notes = append(notes, fmt.Sprintf("Their budgets or focus differ (TIMEOUT %s vs %s, FOCUS \"%s\" vs \"%s\").",
			n.Timeout, u.Timeout, n.Focus, u.Focus))
	}
	if diffs := sameSetup(n, u); len(diffs) > 0 {
		notes = append(notes, fmt.Sprintf("They did NOT run on the same machine, runtime and images: %s.", strings.Join(diffs, "; ")))
	} else {
		notes = append(notes, "Both ran on the same machine, runtime and images (identical recorded image digests).")
	}
	for _, p := range []*provenance{n, u} {
		if _, gone := imagesDuringRun(p); len(gone) > 0 {
			notes = append(notes, fmt.Sprintf("%d of the images the %s run started with were removed from the runtime "+
				"during it (absent afterwards): %s.", len(gone), p.Subject, strings.Join(gone, ", ")))
		}
	}
	return strings.Join(notes, " ")
}

func (rp *report) writeCounts(w *bufio.Writer) {
	writeTallies(w, rp.nodelet.counts(), rp.upstream.counts())
}

// writeTallies is the counts table of the two kubelets.
func writeTallies(w *bufio.Writer, nodelet, upstream tally) {
	fmt.Fprintf(w, "| kubelet | passed | failed | of which timed out | skipped | not run (time budget) |\n"+
		"| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range []struct {
		name string
		t    tally
	}{{"nodelet", nodelet}, {upstreamName, upstream}} {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d |\n", c.name, c.t.passed, c.t.failed, c.t.timedOut, c.t.skipped, c.t.notRun)
	}
	fmt.Fprintf(w, "\nA spec still running when its run's TIMEOUT ended, or past its own time limit, is "+
		"counted failed (\"timed out\") for the kubelet it ran on; \"not run\" specs never started.\n")
}

// h is the heading level of this selection's sections.
func (rp *report) h() string {
	return or(rp.heading, "##")
}

// skipsUsed are the skips.txt lines that match a spec of this selection: the others concern
// another selection.
func (rp *report) skipsUsed() []skip {
	names := mergeNames(rp.nodelet, rp.upstream)
	var used []skip
	for _, sk := range rp.skips {
		re, err := regexp.Compile(sk.pattern)
		if err == nil && slices.ContainsFunc(names, re.MatchString) {
			used = append(used, sk)
		}
	}
	return used
}

// writeProvenance is the per-column record of build, budget, machine, runtime and images.
func (rp *report) writeProvenance(w *bufio.Writer) {
	n, u := rp.nodelet.prov, rp.upstream.prov
	fmt.Fprintf(w, "\n%s Where each column came from\n\n| | nodelet | upstream kubelet |\n| --- | --- | --- |\n", rp.h())
	row := func(label string, get func(*provenance) string) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", label, cell(provField(n, get)), cell(provField(u, get)))
	}
	row("invocation", func(p *provenance) string { return p.Invocation })
	row("started", func(p *provenance) string { return p.Started.Format("2006-01-02 15:04 MST") })
	row("checkout HEAD (uncommitted changes not detected)", func(p *provenance) string { return p.Checkout })
	row("binary (sha256)", func(p *provenance) string { return p.Binary + " (" + p.BinarySHA + ")" })
	row("version", func(p *provenance) string { return p.Version })
	fmt.Fprintf(w, "| TIMEOUT | %s | %s |\n", budget(rp.nodelet), budget(rp.upstream))
	row("ginkgo processes", func(p *provenance) string { return p.Procs })
	row("FOCUS", func(p *provenance) string { return or(p.Focus, "(none: every selected spec)") })
	row("machine", func(p *provenance) string { return p.Machine + ", kernel " + p.Kernel })
	row("runtime", func(p *provenance) string { return p.Runtime })
	for _, img := range imageNames(n, u) {
		row("`"+img+"`", func(p *provenance) string { return shortDigest(p.Images[img]) })
	}
}

func provField(p *provenance, get func(*provenance) string) string {
	if p == nil {
		return "not recorded"
	}
	return or(get(p), "unknown")
}

// budget is a column's TIMEOUT and whether the run used it up.
func budget(r *run) string {
	t := provField(r.prov, func(p *provenance) string { return p.Timeout })
	if r.budgetEnded {
		return t + " (ran out)"
	}
	return t
}

func imageNames(ps ...*provenance) []string {
	set := map[string]bool{}
	for _, p := range ps {
		if p != nil {
			for n := range p.Images {
				set[n] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func (rp *report) writeFailures(w *bufio.Writer) {
	if len(rp.upstream.names) == 0 {
		// Without an upstream column nothing can be called nodelet-only.
		fmt.Fprintf(w, "\n%s Failures on nodelet\n\nThere is no upstream kubelet column to compare with, so none of "+
			"these is known to be nodelet-only. First the investigated cause where hack/conformance/causes.txt has one "+
			"for this spec and message, then the error nodelet logged for the spec's pod, then the suite's message.\n\n", rp.h())
		for _, name := range rp.nodelet.names {
			if n := rp.nodelet.results[name]; n.failed() {
				fmt.Fprintf(w, "- %s (%s): %s\n", name, n.state, cell(describe(rp.causes, "nodelet", name, n, rp.podErrs)))
			}
		}
		return
	}
	nodelet := failureSide{run: rp.nodelet, label: "nodelet", causeKey: "nodelet", podErrs: rp.podErrs}
	upstream := failureSide{run: rp.upstream, label: "upstream", causeKey: "kubelet"}
	rp.writeOnlyFailures(w, "Nodelet-only failures", "Failed on nodelet, not on the upstream kubelet; first the "+
		"investigated cause where hack/conformance/causes.txt has one for this spec and message, then the error "+
		"nodelet logged for the spec's pod, then the suite's message.", nodelet, upstream)
	// The upstream kubelet's own failures too: a reader comparing the columns sees why, a
	// harness artifact included.
	rp.writeOnlyFailures(w, "Upstream-only failures", "Failed on the upstream kubelet, not on nodelet; first the "+
		"investigated cause where hack/conformance/causes.txt has one for this spec and message, then the suite's "+
		"message.", upstream, nodelet)
	fmt.Fprintf(w, "\n%s Failed on both\n\nEach kubelet's own failure.\n\n", rp.h())
	for _, name := range rp.nodelet.names {
		n, u := rp.nodelet.results[name], rp.upstream.results[name]
		if n.failed() && u.failed() {
			fmt.Fprintf(w, "- %s\n  - nodelet (%s): %s\n  - upstream kubelet (%s): %s\n", name,
				n.state, cell(describe(rp.causes, "nodelet", name, n, rp.podErrs)),
				u.state, cell(describe(rp.causes, "kubelet", name, u, nil)))
		}
	}
}

// failureSide is one kubelet's column as writeOnlyFailures reads it: its results and how to name them.
type failureSide struct {
	run      *run
	label    string            // its name in a line: "nodelet" or "upstream"
	causeKey string            // its name in causes.txt: "nodelet" or "kubelet"
	podErrs  map[string]string // the errors it logged per spec's pod, where the log was read
}

// writeOnlyFailures lists the specs that failed on side and not on other, each with side's cause.
func (rp *report) writeOnlyFailures(w *bufio.Writer, title, intro string, side, other failureSide) {
	fmt.Fprintf(w, "\n%s %s\n\n%s\n\n", rp.h(), title, intro)
	for _, name := range side.run.names {
		res := side.run.results[name]
		if res.failed() && !other.run.results[name].failed() {
			fmt.Fprintf(w, "- %s (%s: %s, %s: %s): %s\n", name, side.label, res.state, other.label, state(other.run, name),
				cell(describe(rp.causes, side.causeKey, name, res, side.podErrs)))
		}
	}
}

// mergeNames lists every spec of the runs, each once, in the order the runs first name them
// (nodelet's column first).
func mergeNames(runs ...*run) []string {
	seen := map[string]bool{}
	var names []string
	for _, r := range runs {
		for _, name := range r.names {
			if !seen[name] {
				seen[name], names = true, append(names, name)
			}
		}
	}
	return names
}

// state is a spec's outcome in a column; a spec the column's run did not select (another
// FOCUS, or no run at all) is "—".
func state(r *run, name string) string {
	if res, ok := r.results[name]; ok {
		return res.state
	}
	return "—"
}

// cell escapes text for a markdown table cell or list item.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}
