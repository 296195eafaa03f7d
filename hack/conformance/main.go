// Command conformance turns the ginkgo JSON reports of hack/conformance.sh's node conformance
// runs (nodelet, upstream kubelet) into CONFORMANCE.md, or with -smoke checks that nodelet
// passed every spec it ran.
//
//	go run ./hack/conformance -nodelet N.json -kubelet K.json -skips hack/conformance/skips.txt -out CONFORMANCE.md
//	go run ./hack/conformance -smoke -nodelet N.json
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

func main() {
	nodeletPath := flag.String("nodelet", "", "ginkgo JSON report of the nodelet run")
	kubeletPath := flag.String("kubelet", "", "ginkgo JSON report of the upstream kubelet run (optional)")
	skipsPath := flag.String("skips", "hack/conformance/skips.txt", "the skip list the runs used")
	causesPath := flag.String("causes", "hack/conformance/causes.txt", "known causes of failures, by spec")
	out := flag.String("out", "CONFORMANCE.md", "where to write the table")
	nodeletLog := flag.String("nodelet-log", "", "nodelet's log of the run: failures name the pod error it logged")
	smoke := flag.Bool("smoke", false, "only check that every spec nodelet ran passed")
	flag.Parse()
	if err := execute(*nodeletPath, *kubeletPath, *skipsPath, *causesPath, *nodeletLog, *out, *smoke); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func execute(nodeletPath, kubeletPath, skipsPath, causesPath, nodeletLog, out string, smoke bool) error {
	nodelet, err := readRun(nodeletPath)
	if err != nil {
		return err
	}
	if smoke {
		return checkSmoke(nodelet)
	}
	upstream := &run{results: map[string]result{}}
	if kubeletPath != "" {
		if upstream, err = readRun(kubeletPath); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: no upstream kubelet results: %v\n", err)
			upstream = &run{results: map[string]result{}}
		}
	}
	skips, err := readSkips(skipsPath)
	if err != nil {
		return err
	}
	nodelet.markSkipped(skips)
	upstream.markSkipped(skips)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	causes, err := readSkips(causesPath)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	writeMarkdown(w, nodelet, upstream, skips, causes, podErrors(nodeletLog))
	if err := w.Flush(); err != nil {
		return err
	}
	p, fl, s, n := nodelet.counts()
	fmt.Printf("nodelet: %d passed, %d failed, %d skipped, %d not run; wrote %s\n", p, fl, s, n, out)
	return nil
}

func checkSmoke(nodelet *run) error {
	p, f, _, _ := nodelet.counts()
	if p == 0 {
		return fmt.Errorf("smoke: no spec passed (did the suite start? see _output/conformance/nodelet/e2e.log)")
	}
	for _, name := range nodelet.names {
		if res := nodelet.results[name]; res.state == "failed" {
			fmt.Printf("FAILED %s: %s\n", name, res.message)
		}
	}
	if f > 0 {
		return fmt.Errorf("smoke: %d of %d specs failed", f, p+f)
	}
	fmt.Printf("smoke: all %d specs passed\n", p)
	return nil
}

// skip is one line of skips.txt (a spec regex and why this machine cannot run it) or of
// causes.txt (a spec regex and the investigated cause of its failure).
type skip struct{ pattern, reason string }

// readSkips parses "REGEX ## REASON" lines; # starts a comment line.
func readSkips(path string) ([]skip, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var skips []skip
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pattern, reason, _ := strings.Cut(line, " ## ")
		skips = append(skips, skip{strings.TrimSpace(pattern), strings.TrimSpace(reason)})
	}
	return skips, nil
}

func writeMarkdown(w *bufio.Writer, nodelet, upstream *run, skips, causes []skip, podErrs map[string]string) {
	fmt.Fprintf(w, "# Node conformance\n\n")
	fmt.Fprintf(w, "The [NodeConformance] specs of the upstream node e2e suite (`k8s.io/kubernetes v1.33.4`, "+
		"`test/e2e_node`), label filter `NodeConformance && !Serial && !Flaky && !Feature && !Disruptive`, "+
		"run by `make conformance` on the local control plane against nodelet and then the upstream kubelet "+
		"v1.33.4 on the same machine, runtime and images. Generated %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "| kubelet | passed | failed | skipped | not run (time budget) |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, r := range []struct {
		name string
		run  *run
	}{{"nodelet", nodelet}, {"upstream kubelet v1.33.4", upstream}} {
		p, f, s, n := r.run.counts()
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d |\n", r.name, p, f, s, n)
	}
	fmt.Fprintf(w, "\nSkipped on purpose (hack/conformance/skips.txt), what this machine cannot give:\n\n")
	for _, s := range skips {
		fmt.Fprintf(w, "- `%s`: %s\n", s.pattern, s.reason)
	}
	fmt.Fprintf(w, "\n## Nodelet-only failures\n\nFailed on nodelet, passed on the upstream kubelet (or it did not "+
		"get to run them); the cause is the investigated one (hack/conformance/causes.txt), else the error nodelet "+
		"logged for the spec's pod, else the failure message.\n\n")
	for _, name := range nodelet.names {
		n, u := nodelet.results[name], upstream.results[name]
		if n.state == "failed" && u.state != "failed" {
			fmt.Fprintf(w, "- %s (upstream: %s): %s\n", name, state(upstream, name), cell(knownCause(name, causes, explain(n.message, podErrs))))
		}
	}
	fmt.Fprintf(w, "\n## Failed on both\n\n")
	for _, name := range nodelet.names {
		n, u := nodelet.results[name], upstream.results[name]
		if n.state == "failed" && u.state == "failed" {
			fmt.Fprintf(w, "- %s: %s\n", name, cell(knownCause(name, causes, u.message)))
		}
	}
	fmt.Fprintf(w, "\n## All specs\n\n| spec | nodelet | upstream kubelet |\n| --- | --- | --- |\n")
	for _, name := range mergeNames(nodelet, upstream) {
		fmt.Fprintf(w, "| %s | %s | %s |\n", cell(name), state(nodelet, name), state(upstream, name))
	}
}

// mergeNames lists every spec of both runs, nodelet's order first.
func mergeNames(a, b *run) []string {
	names := append([]string(nil), a.names...)
	for _, n := range b.names {
		if _, ok := a.results[n]; !ok {
			names = append(names, n)
		}
	}
	return names
}

func state(r *run, name string) string {
	res, ok := r.results[name]
	if !ok {
		return "not run"
	}
	return res.state
}

// cell escapes text for a markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

// knownCause prefixes message with the investigated cause of spec's failure, if causes.txt
// has one.
func knownCause(spec string, causes []skip, message string) string {
	for _, c := range causes {
		if re, err := regexp.Compile(c.pattern); err == nil && re.MatchString(spec) {
			return "cause: " + c.reason + " — suite: " + message
		}
	}
	return message
}
