//go:build guest

package guest

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// event is one line of `go test -json` (test2json) output.
type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// guestTest is what the guest said of one of its top-level tests.
type guestTest struct {
	name    string
	action  string // pass, fail or skip; empty: it never finished
	output  strings.Builder
	elapsed float64
}

// TestGuest boots the guest (hack/guest.sh run) and replays each in-guest test as a subtest:
// its output, then its verdict. A test the guest failed, skipped or never finished fails here.
func TestGuest(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("the guest lane needs root (debootstrap, the guest's disks)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command(filepath.Join(root, "hack/guest.sh"), "run")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/guest.sh run: %v", err)
	}
	t.Logf("guest run took %v", time.Since(start).Round(time.Second))
	runDir := filepath.Join(root, "_output/guest/run")
	tests, err := readEvents(filepath.Join(runDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) == 0 {
		t.Fatalf("the guest ran no tests; its output:\n%s", readFile(filepath.Join(runDir, "results/test.out")))
	}
	failed := false
	for _, gt := range tests {
		failed = !t.Run(gt.name, func(t *testing.T) {
			t.Logf("in the guest (%.1fs):\n%s", gt.elapsed, gt.output.String())
			if gt.action != "pass" {
				t.Errorf("guest test %s: %s", gt.name, orUnfinished(gt.action))
			}
		}) || failed
	}
	// A binary that failed outside every test (TestMain, a panic) says why in its output.
	if code := strings.TrimSpace(readFile(filepath.Join(runDir, "results/exit"))); code != "0" && !failed {
		t.Errorf("the in-guest test binary exited %s; its output:\n%s", code, readFile(filepath.Join(runDir, "results/test.out")))
	}
}

// readEvents groups test2json events by top-level test, in the order the tests started.
// A subtest's output belongs to its parent: the host reports the guest's top-level tests.
func readEvents(path string) ([]*guestTest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var order []*guestTest
	byName := map[string]*guestTest{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Test == "" {
			continue
		}
		top, _, sub := strings.Cut(e.Test, "/")
		gt := byName[top]
		if gt == nil {
			gt = &guestTest{name: top}
			byName[top] = gt
			order = append(order, gt)
		}
		switch e.Action {
		case "output":
			gt.output.WriteString(e.Output)
		case "pass", "fail", "skip":
			if !sub {
				gt.action, gt.elapsed = e.Action, e.Elapsed
			}
		}
	}
	return order, sc.Err()
}

func orUnfinished(action string) string {
	if action == "" {
		return "never finished (the binary died or timed out)"
	}
	return action
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}
