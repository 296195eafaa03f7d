package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// The resources selection (hack/conformance/resources.txt): the upstream node suite's specs for
// the CPU, memory and topology managers, the pod-resources API and device plugins, run one at a
// time, part by part, like the serial selection. Most of them need more than this machine has
// (SMT, several NUMA nodes, SR-IOV devices, cgroup v2) and the suite skips them itself; the page
// names each with the reason.

const resourcesTitle = "\n# Resources selection: CPU, memory and topology managers, pod resources, device plugins\n\n"

// resourcesSelection is the selection's label filter: none. Upstream labels whole contexts of
// these specs Flaky, and they are the ones that can run here.
func resourcesSelection(specReport) bool { return true }

// loadResourceSections reads each part's columns from dir/part-N/{nodelet,kubelet}. Unlike a
// serial part, a part with only the upstream kubelet's column is shown: that column is run first,
// while nodelet's managers are being built.
func loadResourceSections(dir string, parts []serialPart, main report) []serialSection {
	var sections []serialSection
	for _, p := range parts {
		sec := serialSection{part: p}
		columns := [2]*run{emptyRun(), emptyRun()}
		ran := false
		for i, subject := range []string{"nodelet", "kubelet"} {
			from := filepath.Join(dir, fmt.Sprintf("part-%d", p.number), subject)
			r, err := loadColumn(filepath.Join(from, "report.json"), resourcesSelection)
			switch {
			case errors.Is(err, os.ErrNotExist):
				continue
			case err != nil:
				fmt.Fprintf(os.Stderr, "conformance: resources part %d, %s: %v\n", p.number, subject, err)
				continue
			}
			r.keepOnly(compileAll(p.focus))
			r.explainSkips(main.skips)
			slices.Sort(r.names) // ginkgo randomizes the order: sorted, related specs sit together
			columns[i], ran = r, true
		}
		if ran {
			nodeletLog := filepath.Join(dir, fmt.Sprintf("part-%d", p.number), "nodelet", "nodelet.log")
			sec.results = &report{nodelet: columns[0], upstream: columns[1], skips: main.skips, causes: main.causes,
				podErrs: podErrors(nodeletLog), generated: main.generated, heading: "###"}
		}
		sections = append(sections, sec)
	}
	return sections
}

// writeResources is the resources selection: what it runs, its totals, the specs this machine
// cannot run and why, then each part in the shape of the parallel selection.
func (rp *report) writeResources(w *bufio.Writer) {
	fmt.Fprint(w, resourcesTitle)
	fmt.Fprintf(w, "The upstream node suite's own specs for the container manager's resource managers: the CPU "+
		"manager (static policy, reserved CPUs, policy options), the memory manager, the topology manager, the "+
		"pod-resources gRPC API and device plugins (the suite's sample device plugin, run as a pod), with their "+
		"metrics. All are `Serial`; they run one at a time (focus below, from hack/conformance/resources.txt, no "+
		"label filter: upstream labels whole contexts of them `Flaky`, the pod-resources specs without SR-IOV "+
		"devices among them, and those are the ones this machine can run, so both kubelets run them alike). They "+
		"change the kubelet's configuration (policies, reserved CPUs and memory, feature gates) and restart it "+
		"through hack/conformance/shim/systemctl, both kubelets alike; before each kubelet starts, the managers' "+
		"state files of the last one are removed. Each part runs and is kept on its own "+
		"(`make conformance-resources PART=N`, both kubelets; `SUBJECTS=kubelet` runs the upstream column "+
		"alone).\n\n")
	writePartTotals(w, rp.resources)
	writeCannotRun(w, rp.resources)
	for _, sec := range rp.resources {
		if !writePartHead(w, sec, "resources") {
			continue
		}
		if len(sec.results.nodelet.names) == 0 {
			fmt.Fprintf(w, "There is no nodelet column yet: it has not been run, or its run did not produce results "+
				"(`SUBJECTS=nodelet make conformance-resources PART=%d` runs it).\n\n", sec.part.number)
		}
		sec.results.writeBody(w)
	}
}

// writeCannotRun lists the specs of the selection that were skipped, by the suite itself (the
// machine lacks what they need) or by skips.txt, each with its reason; a reason that differs
// between the kubelets is given for each.
func writeCannotRun(w *bufio.Writer, sections []serialSection) {
	var lines []string
	for _, sec := range sections {
		if sec.results == nil {
			continue
		}
		n, u := sec.results.nodelet, sec.results.upstream
		for _, name := range mergeNames(n, u) {
			if reason := skipReason(n, u, name); reason != "" {
				lines = append(lines, fmt.Sprintf("- %s: %s\n", name, cell(reason)))
			}
		}
	}
	fmt.Fprintf(w, "\n## Specs this machine cannot run\n\n")
	if len(lines) == 0 {
		fmt.Fprintf(w, "None of the specs run so far was skipped.\n")
		return
	}
	fmt.Fprintf(w, "Skipped by the suite itself, which checks the machine first (2 CPUs without SMT, one NUMA node, "+
		"cgroup v1, no SR-IOV device here; some specs run their first steps and skip the rest, as the reason says), "+
		"or by hack/conformance/skips.txt (\"skips.txt:\"); %d specs:\n\n", len(lines))
	for _, l := range lines {
		fmt.Fprint(w, l)
	}
}

// skipReason is why a spec was skipped, "" when no column skipped it. A spec one kubelet
// skipped and the other ran is marked as such: the skip then depends on the kubelet (what it
// reports as allocatable, say), not on the machine alone.
func skipReason(n, u *run, name string) string {
	nr, ur := n.results[name], u.results[name]
	nSkip, uSkip := nr.state == stateSkipped, ur.state == stateSkipped
	ran := func(r result) bool { return r.state != "" && r.state != stateSkipped && r.state != stateNotRun }
	switch {
	case nSkip && uSkip && nr.message != ur.message:
		return fmt.Sprintf("upstream kubelet: %s; nodelet: %s", or(ur.message, "no reason given"), or(nr.message, "no reason given"))
	case uSkip && ran(nr):
		return fmt.Sprintf("upstream kubelet only (nodelet: %s): %s", nr.state, or(ur.message, "no reason given"))
	case nSkip && ran(ur):
		return fmt.Sprintf("nodelet only (upstream kubelet: %s): %s", ur.state, or(nr.message, "no reason given"))
	case uSkip:
		return or(ur.message, "no reason given")
	case nSkip:
		return or(nr.message, "no reason given")
	}
	return ""
}
