// Command conformance turns the ginkgo JSON reports of hack/conformance.sh's node conformance
// runs (nodelet, upstream kubelet) into CONFORMANCE.md, checks a smoke run, or records what a
// run is about to use (build, images, budget) next to its report.
//
//	go run ./hack/conformance -nodelet N/report.json -kubelet K/report.json -serial-dir hack/conformance/results/serial \
//		-podapi hack/conformance/podapi.txt -podapi-nodelet hack/conformance/results/podapi/nodelet -podapi-kubelet ... \
//		-resources hack/conformance/resources.txt -resources-dir hack/conformance/results/resources \
//		-dra hack/conformance/dra.txt -dra-nodelet hack/conformance/results/dra/nodelet -dra-kubelet ... \
//		-guest hack/conformance/guest.txt -guest-nodelet hack/conformance/results/guest/nodelet -guest-kubelet ... -out CONFORMANCE.md
//	go run ./hack/conformance -smoke -nodelet N/report.json
//	go run ./hack/conformance -record DIR/run.json -subject nodelet -binary BIN -timeout 2h ...
//	go run ./hack/conformance -record-end DIR/run.json
//	go run ./hack/conformance -keep DIR -keep-to hack/conformance/results/SELECTION/SUBJECT
//
// Each report's provenance is read from run.json in the report's directory.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type options struct {
	nodeletPath, kubeletPath, skipsPath, causesPath, nodeletLog, out string
	serialDir, serialPath                                            string
	podapiPath, podapiNodelet, podapiKubelet                         string
	guestPath, guestNodelet, guestKubelet                            string
	resourcesPath, resourcesDir                                      string
	draPath, draNodelet, draKubelet                                  string
	compatDir                                                        string
	smoke                                                            bool
	record, recordEnd, socket                                        string
	keep, keepTo                                                     string
	prov                                                             provenance
}

func main() {
	var o options
	flag.StringVar(&o.nodeletPath, "nodelet", "", "ginkgo JSON report of the nodelet run")
	flag.StringVar(&o.kubeletPath, "kubelet", "", "ginkgo JSON report of the upstream kubelet run (optional)")
	flag.StringVar(&o.serialDir, "serial-dir", "", "the serial selection's results: part-N/{nodelet,kubelet}/report.json (optional)")
	flag.StringVar(&o.serialPath, "serial", "hack/conformance/serial.txt", "the serial selection's parts and focus list")
	flag.StringVar(&o.podapiPath, "podapi", "", "the pod API selection's focus list (hack/conformance/podapi.txt; optional)")
	flag.StringVar(&o.podapiNodelet, "podapi-nodelet", "", "-podapi: the directory of nodelet's column (report.json, run.json, nodelet.log)")
	flag.StringVar(&o.podapiKubelet, "podapi-kubelet", "", "-podapi: the directory of the upstream kubelet's column")
	flag.StringVar(&o.guestPath, "guest", "", "the guest selection's focus list (hack/conformance/guest.txt; optional)")
	flag.StringVar(&o.guestNodelet, "guest-nodelet", "", "-guest: the directory of nodelet's column (report.json, run.json)")
	flag.StringVar(&o.guestKubelet, "guest-kubelet", "", "-guest: the directory of the upstream kubelet's column")
	flag.StringVar(&o.resourcesPath, "resources", "hack/conformance/resources.txt", "the resources selection's parts and focus list")
	flag.StringVar(&o.resourcesDir, "resources-dir", "", "the resources selection's results: part-N/{nodelet,kubelet}/report.json (optional)")
	flag.StringVar(&o.draPath, "dra", "", "the DRA selection's focus list (hack/conformance/dra.txt; optional)")
	flag.StringVar(&o.draNodelet, "dra-nodelet", "", "-dra: the directory of nodelet's column (report.json, run.json, nodelet.log)")
	flag.StringVar(&o.draKubelet, "dra-kubelet", "", "-dra: the directory of the upstream kubelet's column")
	flag.StringVar(&o.compatDir, "compat-dir", "", "the compatibility lane's (containerd 1.6) kept columns, in the shape of hack/conformance/results (optional)")
	flag.StringVar(&o.skipsPath, "skips", "hack/conformance/skips.txt", "the skip list the runs used")
	flag.StringVar(&o.causesPath, "causes", "hack/conformance/causes.txt", "investigated causes of failures")
	flag.StringVar(&o.out, "out", "CONFORMANCE.md", "where to write the table")
	flag.StringVar(&o.nodeletLog, "nodelet-log", "", "nodelet's log of the run: failures name the pod error it logged")
	flag.BoolVar(&o.smoke, "smoke", false, "only check that every spec nodelet ran passed")
	flag.StringVar(&o.record, "record", "", "write the provenance of a run about to start to this file")
	flag.StringVar(&o.recordEnd, "record-end", "", "add the images at the end of a run to this provenance file")
	flag.StringVar(&o.socket, "socket", "/run/nodelet/containerd/containerd.sock", "containerd socket (for -record)")
	flag.StringVar(&o.keep, "keep", "", "copy what the report needs of the run in this directory to -keep-to")
	flag.StringVar(&o.keepTo, "keep-to", "", "-keep: the repository directory that keeps the column")
	flag.StringVar(&o.prov.Subject, "subject", "", "-record: nodelet or kubelet")
	flag.StringVar(&o.prov.Invocation, "invocation", "", "-record: id of the make conformance invocation")
	flag.StringVar(&o.prov.Binary, "binary", "", "-record: the kubelet binary under test")
	flag.StringVar(&o.prov.Version, "version", "", "-record: the binary's version, if it reports one")
	flag.StringVar(&o.prov.Timeout, "timeout", "", "-record: the run's TIMEOUT")
	flag.StringVar(&o.prov.Procs, "procs", "", "-record: ginkgo processes")
	flag.StringVar(&o.prov.Focus, "focus", "", "-record: the run's FOCUS")
	flag.StringVar(&o.prov.Checkout, "checkout", "", "-record: the checkout HEAD, when recording away from it (in the guest)")
	flag.Parse()
	if err := execute(o); err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func execute(o options) error {
	switch {
	case o.record != "":
		return recordStart(o.record, o.prov, o.socket)
	case o.recordEnd != "":
		return recordEnd(o.recordEnd, o.socket)
	case o.keep != "":
		if o.keepTo == "" {
			return fmt.Errorf("-keep needs -keep-to")
		}
		return keepColumn(o.keep, o.keepTo)
	}
	nodelet, err := loadColumn(o.nodeletPath, parallelSelection)
	if err != nil {
		return err
	}
	if o.smoke {
		return checkSmoke(nodelet)
	}
	upstream := emptyRun()
	if o.kubeletPath != "" {
		if upstream, err = loadColumn(o.kubeletPath, parallelSelection); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: no upstream kubelet results: %v\n", err)
			upstream = emptyRun()
		}
	}
	skips, err := readSkips(o.skipsPath)
	if err != nil {
		return err
	}
	causes, err := readCauses(o.causesPath)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	nodelet.explainSkips(skips)
	upstream.explainSkips(skips)
	page := report{nodelet: nodelet, upstream: upstream, skips: skips, causes: causes,
		podErrs: podErrors(o.nodeletLog), generated: time.Now().UTC()}
	if o.serialDir != "" {
		parts, err := readSerialParts(o.serialPath)
		if err != nil {
			return err
		}
		page.serial = loadSerialSections(o.serialDir, parts, page)
	}
	if o.resourcesDir != "" {
		parts, err := readSerialParts(o.resourcesPath) // the same "#- part N: TITLE" shape
		if err != nil {
			return err
		}
		page.resources = loadResourceSections(o.resourcesDir, parts, page)
	}
	if o.podapiPath != "" {
		if page.podapi, err = loadFocusSelection(o.podapiPath, o.podapiNodelet, o.podapiKubelet, page); err != nil {
			return err
		}
	}
	if o.draPath != "" {
		if page.dra, err = loadFocusSelection(o.draPath, o.draNodelet, o.draKubelet, page); err != nil {
			return err
		}
	}
	if o.guestPath != "" {
		if page.guest, err = loadFocusSelection(o.guestPath, o.guestNodelet, o.guestKubelet, page); err != nil {
			return err
		}
	}
	if o.compatDir != "" {
		if err := page.attachCompat(o.compatDir, o); err != nil {
			return err
		}
	}
	if err := writeFile(o.out, page.write); err != nil {
		return err
	}
	t := nodelet.counts()
	fmt.Printf("nodelet: %d passed, %d failed (%d timed out), %d skipped, %d not run; wrote %s\n",
		t.passed, t.failed, t.timedOut, t.skipped, t.notRun, o.out)
	return nil
}

// loadColumn reads a run's report and the provenance recorded next to it (if any).
func loadColumn(reportPath string, sel selector) (*run, error) {
	r, err := readRun(reportPath, sel)
	if err != nil {
		return nil, err
	}
	if p, err := readProvenance(filepath.Join(filepath.Dir(reportPath), "run.json")); err == nil {
		r.prov = p
	}
	return r, nil
}

func writeFile(path string, write func(*bufio.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	write(w)
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func checkSmoke(nodelet *run) error {
	t := nodelet.counts()
	if t.passed == 0 {
		return fmt.Errorf("smoke: no spec passed (did the suite start? see _output/conformance/nodelet/e2e.log)")
	}
	for _, name := range nodelet.names {
		if res := nodelet.results[name]; res.failed() || res.state == stateNotRun {
			fmt.Printf("%s %s: %s\n", strings.ToUpper(res.state), name, res.message)
		}
	}
	if t.failed > 0 || t.notRun > 0 {
		return fmt.Errorf("smoke: %d of %d specs failed (%d timed out), %d not run", t.failed, t.passed+t.failed, t.timedOut, t.notRun)
	}
	fmt.Printf("smoke: all %d specs passed\n", t.passed)
	return nil
}

// skip is one line of skips.txt: a spec regex and why this machine cannot run it.
type skip struct{ pattern, reason string }

// readSkips parses "REGEX ## REASON" lines.
func readSkips(path string) ([]skip, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	var skips []skip
	for _, line := range lines {
		pattern, reason, _ := strings.Cut(line, " ## ")
		skips = append(skips, skip{strings.TrimSpace(pattern), strings.TrimSpace(reason)})
	}
	return skips, nil
}

// readLines returns a file's lines without blank lines and # comment lines.
func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	return lines, nil
}
