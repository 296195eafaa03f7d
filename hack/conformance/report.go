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
	SpecReports []specReport
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

// result is one spec's outcome on one kubelet.
type result struct {
	state   string // passed, failed, skipped (timedout, panicked, interrupted count as failed)
	message string // failure or skip message, first line
}

// run holds one kubelet's results keyed by spec name.
type run struct {
	results map[string]result
	names   []string // spec names in suite order
}

// readRun loads a ginkgo JSON report, keeping only the specs the label filter selects.
func readRun(path string) (*run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r := &run{results: map[string]result{}}
	for _, rep := range reports {
		for _, spec := range rep.SpecReports {
			if spec.LeafNodeType != "It" || !selected(spec) {
				continue
			}
			name := specName(spec)
			if _, dup := r.results[name]; !dup {
				r.names = append(r.names, name)
			}
			r.results[name] = toResult(spec)
		}
	}
	if len(r.names) == 0 {
		return nil, fmt.Errorf("%s holds no NodeConformance spec results (the suite did not start?)", path)
	}
	return r, nil
}

// selected mirrors the run's label filter: NodeConformance && !Serial && !Flaky && !Feature
// && !Disruptive (Feature:X labels count as Feature).
func selected(spec specReport) bool {
	labels := slices.Clone(spec.LeafNodeLabels)
	for _, l := range spec.ContainerHierarchyLabels {
		labels = append(labels, l...)
	}
	conformance := false
	for _, l := range labels {
		switch {
		case l == "NodeConformance":
			conformance = true
		case l == "Serial", l == "Flaky", l == "Disruptive", l == "Feature", strings.HasPrefix(l, "Feature:"):
			return false
		}
	}
	return conformance
}

func specName(spec specReport) string {
	parts := append(slices.Clone(spec.ContainerHierarchyTexts), spec.LeafNodeText)
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " ")
}

func toResult(spec specReport) result {
	msg := ""
	if spec.Failure != nil {
		msg = firstLine(spec.Failure.Message)
	}
	switch {
	case spec.State == "interrupted", spec.State == "timedout" && strings.Contains(msg, "suite timeout"),
		spec.State == "skipped" && msg == "":
		// The run's time budget (TIMEOUT) ran out before or while this spec ran. (A skip by the
		// suite itself carries its reason; skips.txt's are put back by markSkipped.)
		return result{state: "not run", message: msg}
	case spec.State == "passed", spec.State == "skipped":
		return result{state: spec.State, message: msg}
	case spec.State == "pending":
		return result{state: "skipped", message: "pending"}
	default:
		return result{state: "failed", message: strings.TrimSpace(spec.State + ": " + msg)}
	}
}

// firstLine squeezes a failure message to one line of at most 240 characters: gomega puts the
// interesting part ("Expected <x> to ...") on the lines after the first.
func firstLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 240 {
		s = s[:237] + "..."
	}
	return s
}

// counts returns passed, failed, skipped and not run (time budget exhausted).
func (r *run) counts() (p, f, s, n int) {
	for _, res := range r.results {
		switch res.state {
		case "passed":
			p++
		case "failed":
			f++
		case "not run":
			n++
		default:
			s++
		}
	}
	return p, f, s, n
}

// markSkipped turns the specs skips.txt excluded from "not run" into "skipped".
func (r *run) markSkipped(skips []skip) {
	for _, sk := range skips {
		re, err := regexp.Compile(sk.pattern)
		if err != nil {
			continue
		}
		for name, res := range r.results {
			if res.state == "not run" && re.MatchString(name) {
				r.results[name] = result{state: "skipped", message: "skips.txt: " + sk.reason}
			}
		}
	}
}
