package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// The subset of ginkgo v2's JSON report (types.Report) the table needs.
type ginkgoReport struct {
	SuiteDescription string
	SuiteConfig      struct {
		FocusStrings []string
		SkipStrings  []string
	}
	SpecialSuiteFailureReasons []string
	SpecReports                []specReport
}

type specReport struct {
	ContainerHierarchyTexts  []string
	ContainerHierarchyLabels [][]string
	LeafNodeType             string
	LeafNodeText             string
	LeafNodeLabels           []string
	State                    string
	Failure                  *struct{ Message string }
}

// Outcomes of one spec on one kubelet. "timed out" and "interrupted" count as failed.
const (
	statePassed      = "passed"
	stateFailed      = "failed"
	stateTimedOut    = "timed out"
	stateInterrupted = "interrupted"
	stateSkipped     = "skipped"
	stateNotRun      = "not run"
)

// How ginkgo says the run's --timeout (TIMEOUT) ended: v2.21 reports the suite failure reason
// "Suite Timeout Elapsed" and gives each running spec state "timedout" with "A suite timeout
// occurred"; its interrupt handler names the cause "Interrupted by Timeout".
const (
	suiteTimeoutReason  = "Suite Timeout Elapsed"
	suiteTimeoutMessage = "A suite timeout occurred"
	timeoutInterrupt    = "Interrupted by Timeout"
)

// result is one spec's outcome on one kubelet.
type result struct {
	state   string
	message string // failure or skip message squeezed to one line, at most 240 characters
	full    string // the whole failure message on one line: causes match against it
}

// failed reports whether the spec counts as failed on this kubelet.
func (r result) failed() bool {
	return r.state == stateFailed || r.state == stateTimedOut || r.state == stateInterrupted
}

// run holds one kubelet's results keyed by spec name.
type run struct {
	results     map[string]result
	names       []string // spec names in suite order
	budgetEnded bool     // the TIMEOUT budget ran out before the suite finished
	skipRes     []string // the --skip regexes the run used
	prov        *provenance
}

func emptyRun() *run { return &run{results: map[string]result{}} }

// readRun loads a ginkgo JSON report, keeping only the specs the label filter and the run's
// --focus select.
func readRun(path string, sel selector) (*run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := emptyRun()
	for _, rep := range reports {
		r.add(rep, sel)
	}
	if len(r.names) == 0 {
		return nil, fmt.Errorf("%s holds no results of the selected specs (the suite did not start?)", path)
	}
	return r, nil
}

func (r *run) add(rep ginkgoReport, sel selector) {
	if slices.Contains(rep.SpecialSuiteFailureReasons, suiteTimeoutReason) ||
		slices.Contains(rep.SpecialSuiteFailureReasons, timeoutInterrupt) {
		r.budgetEnded = true
	}
	r.skipRes = append(r.skipRes, rep.SuiteConfig.SkipStrings...)
	focus := compileAll(rep.SuiteConfig.FocusStrings)
	skip := compileAll(rep.SuiteConfig.SkipStrings)
	for _, spec := range rep.SpecReports {
		if spec.LeafNodeType != "It" || !sel(spec) {
			continue
		}
		name := specName(spec)
		text := rep.SuiteDescription + " " + name // what ginkgo matches --focus/--skip against
		if len(focus) > 0 && !matchesAny(focus, text) && !matchesAny(focus, name) {
			continue // not asked for: absent from this column rather than "not run"
		}
		res := toResult(spec, matchesAny(skip, text) || matchesAny(skip, name), r.budgetEnded)
		old, dup := r.results[name]
		if dup && ranOrSkippedWithReason(old) && !ranOrSkippedWithReason(res) {
			// A column of several ginkgo runs (the pod API selection's parallel and Serial runs
			// share a focus): a run whose label filter left the spec out does not hide the
			// result of the run that ran it.
			continue
		}
		if !dup {
			r.names = append(r.names, name)
		}
		r.results[name] = res
	}
}

// ranOrSkippedWithReason is false for a spec its run left out without a word: excluded by the
// label filter or --skip, or never started.
func ranOrSkippedWithReason(res result) bool {
	return res.state != stateNotRun && (res.state != stateSkipped || res.full != "")
}

// selector mirrors a selection's label filter.
type selector func(specReport) bool

// labels are a spec's own labels and its containers'.
func labels(spec specReport) []string {
	all := slices.Clone(spec.LeafNodeLabels)
	for _, l := range spec.ContainerHierarchyLabels {
		all = append(all, l...)
	}
	return all
}

// parallelSelection mirrors the parallel run's label filter: NodeConformance && !Serial &&
// !Flaky && !Feature && !Disruptive (Feature:X labels count as Feature).
func parallelSelection(spec specReport) bool {
	conformance := false
	for _, l := range labels(spec) {
		switch {
		case l == "NodeConformance":
			conformance = true
		case l == "Serial", l == "Flaky", l == "Disruptive", l == "Feature", strings.HasPrefix(l, "Feature:"):
			return false
		}
	}
	return conformance
}

// serialSelection mirrors the serial run's label filter, !Flaky; its focus does the rest.
func serialSelection(spec specReport) bool {
	return !slices.Contains(labels(spec), "Flaky")
}

func specName(spec specReport) string {
	parts := append(slices.Clone(spec.ContainerHierarchyTexts), spec.LeafNodeText)
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " ")
}

// toResult maps ginkgo's spec state to an outcome. skippedByFilter says the run's --skip
// excluded the spec; budgetEnded that the run's TIMEOUT ended it.
func toResult(spec specReport, skippedByFilter, budgetEnded bool) result {
	full := ""
	if spec.Failure != nil {
		full = strings.Join(strings.Fields(spec.Failure.Message), " ")
	}
	res := result{state: spec.State, message: shorten(full), full: full}
	switch spec.State {
	case "passed":
	case "pending":
		res.state, res.message = stateSkipped, "pending"
	case "skipped":
		// A skip by the suite itself carries its reason. Without one the spec was either
		// excluded by --skip or never started because the run was interrupted.
		res.state = stateSkipped
		if full == "" && !skippedByFilter {
			res.state = stateNotRun
		}
	case "interrupted", "timedout":
		// Running when the run was interrupted or timed out: it hung (or was slow) on this
		// kubelet. "timedout" alone is also the spec's own SpecTimeout/NodeTimeout.
		res.state = stateTimedOut
		if spec.State == "interrupted" && !budgetEnded && !strings.Contains(full, timeoutInterrupt) {
			res.state = stateInterrupted // by a signal, not the budget
		}
		if strings.Contains(full, suiteTimeoutMessage) || strings.Contains(full, timeoutInterrupt) {
			res.message = shorten("the TIMEOUT budget ended while it ran: " + full)
		}
	default: // failed, panicked, aborted
		res.state = stateFailed
		if spec.State != "failed" {
			res.message = shorten(spec.State + ": " + full)
		}
	}
	return res
}

// shorten cuts a one-line message to at most 240 characters: gomega's interesting part
// ("Expected <x> to ...") comes early.
func shorten(s string) string {
	if len(s) > 240 {
		s = s[:237] + "..."
	}
	return s
}

func compileAll(patterns []string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range patterns {
		if re, err := regexp.Compile(p); err == nil {
			out = append(out, re)
		}
	}
	return out
}

func matchesAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// tally is one column's counts; failed includes timedOut.
type tally struct{ passed, failed, timedOut, skipped, notRun int }

func (t tally) plus(o tally) tally {
	return tally{t.passed + o.passed, t.failed + o.failed, t.timedOut + o.timedOut, t.skipped + o.skipped, t.notRun + o.notRun}
}

func (r *run) counts() tally {
	var t tally
	for _, res := range r.results {
		switch {
		case res.state == statePassed:
			t.passed++
		case res.failed():
			t.failed++
			if res.state == stateTimedOut {
				t.timedOut++
			}
		case res.state == stateNotRun:
			t.notRun++
		default:
			t.skipped++
		}
	}
	return t
}

// explainSkips gives the specs skips.txt excluded the reason skips.txt states.
func (r *run) explainSkips(skips []skip) {
	for _, sk := range skips {
		re, err := regexp.Compile(sk.pattern)
		if err != nil {
			continue
		}
		for name, res := range r.results {
			if res.state == stateSkipped && res.message == "" && re.MatchString(name) {
				res.message = "skips.txt: " + sk.reason
				r.results[name] = res
			}
		}
	}
}
