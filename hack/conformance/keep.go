package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// userInterrupt is how ginkgo names a run stopped by a signal (not by its --timeout).
const userInterrupt = "Interrupted by User"

// keepColumn copies what the report needs of one column's run from dir to the repository
// directory to (hack/conformance/results/SELECTION/SUBJECT), so a column measured in one
// session can stand beside one measured later: the ginkgo report cut down to the fields the
// table reads (no captured output), the provenance, and the nodelet log's pod errors.
func keepColumn(dir, to string) error {
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return err
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "report.json"), err)
	}
	for _, rep := range reports {
		if slices.Contains(rep.SpecialSuiteFailureReasons, userInterrupt) {
			// Someone stopped the run: it is not a result, and the kept column stays as it was.
			return fmt.Errorf("%s: the run was interrupted (%s); the column in %s is left as it was", dir, userInterrupt, to)
		}
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(to, "report.json"), reports); err != nil {
		return err
	}
	prov, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return fmt.Errorf("a column without its provenance cannot be kept: %w", err)
	}
	if err := os.WriteFile(filepath.Join(to, "run.json"), prov, 0o644); err != nil {
		return err
	}
	return keepPodErrors(filepath.Join(dir, "nodelet.log"), filepath.Join(to, "nodelet.log"))
}

// keepPodErrors copies the log lines podErrors reads (error lines naming a pod), nothing else.
func keepPodErrors(from, to string) error {
	in, err := os.Open(from)
	if errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(to, nil, 0o644) // the upstream kubelet's column: no nodelet log
	}
	if err != nil {
		return err
	}
	defer in.Close()
	var kept strings.Builder
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "E") && strings.Contains(line, ` pod="`) && errInLogLine.MatchString(line) {
			kept.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return os.WriteFile(to, []byte(kept.String()), 0o644)
}
