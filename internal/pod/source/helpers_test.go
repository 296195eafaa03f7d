package source

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

const testNode = "node1"

// waitTimeout bounds every wait for something that should happen promptly.
const waitTimeout = 5 * time.Second

// manifest returns a YAML static pod manifest with one container.
func manifest(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: main
    image: %s
`, name, image)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeAtomic saves like many editors and config tools: write aside, then rename.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func receive(t *testing.T, out <-chan []*v1.Pod) []*v1.Pod {
	t.Helper()
	select {
	case pods := <-out:
		return pods
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a snapshot")
		return nil
	}
}

// receiveNames waits for a snapshot whose pod names are want, skipping
// intermediate ones (a burst of file events may yield several).
func receiveNames(t *testing.T, out <-chan []*v1.Pod, want ...string) []*v1.Pod {
	t.Helper()
	deadline := time.After(waitTimeout)
	var last []string
	for {
		select {
		case pods := <-out:
			last = names(pods)
			if slices.Equal(last, want) {
				return pods
			}
		case <-deadline:
			t.Fatalf("timed out waiting for snapshot %v; last one was %v", want, last)
		}
	}
}

func expectNoSnapshot(t *testing.T, out <-chan []*v1.Pod) {
	t.Helper()
	select {
	case pods := <-out:
		t.Fatalf("unexpected snapshot %v", names(pods))
	default:
	}
}

func names(pods []*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func drainEvents(rec *record.FakeRecorder) []string {
	var events []string
	for {
		select {
		case e := <-rec.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

func expectOneEvent(t *testing.T, rec *record.FakeRecorder, wantParts ...string) {
	t.Helper()
	events := drainEvents(rec)
	if len(events) != 1 {
		t.Fatalf("want exactly one event, got %d: %q", len(events), events)
	}
	for _, part := range wantParts {
		if !strings.Contains(events[0], part) {
			t.Errorf("event %q does not contain %q", events[0], part)
		}
	}
}
