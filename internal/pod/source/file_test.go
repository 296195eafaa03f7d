package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// runFileSource starts a file source on path and stops it when the test ends.
func runFileSource(t *testing.T, path string, period time.Duration) (<-chan []*v1.Pod, *record.FakeRecorder) {
	t.Helper()
	out := make(chan []*v1.Pod)
	rec := record.NewFakeRecorder(100)
	src := NewFileSource(path, testNode, period, out, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out, rec
}

// syncedFileSource returns a source driven by calling sync directly, for
// checks that nothing is sent or reported twice.
func syncedFileSource(path string) (*FileWatcher, chan []*v1.Pod, *record.FakeRecorder) {
	out := make(chan []*v1.Pod, 10)
	rec := record.NewFakeRecorder(100)
	return NewFileSource(path, testNode, time.Hour, out, rec), out, rec
}

func TestFileSourceFollowsDirectoryChanges(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:1"))
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), manifest("hidden", "nginx:1"))
	writeFile(t, filepath.Join(dir, "a.yaml~"), manifest("backup", "nginx:1"))
	writeFile(t, filepath.Join(dir, "a.yaml.swp"), "binary junk")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, rec := runFileSource(t, dir, time.Hour)

	first := receiveNames(t, out, "a-node1")
	if first[0].Annotations[podutil.AnnotationSource] != podutil.FileSource {
		t.Errorf("source annotation = %q", first[0].Annotations[podutil.AnnotationSource])
	}
	writeFile(t, filepath.Join(dir, "b.json"),
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"x:1"}]}}`)
	receiveNames(t, out, "a-node1", "b-node1")

	writeAtomic(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:2"))
	edited := receiveNames(t, out, "a-node1", "b-node1")
	for _, p := range edited {
		if p.Name == "a-node1" && (p.UID == first[0].UID || p.Spec.Containers[0].Image != "nginx:2") {
			t.Errorf("edit not picked up: uid %s image %s", p.UID, p.Spec.Containers[0].Image)
		}
	}

	if err := os.Remove(filepath.Join(dir, "b.json")); err != nil {
		t.Fatal(err)
	}
	receiveNames(t, out, "a-node1")
	if events := drainEvents(rec); len(events) != 0 {
		t.Errorf("unexpected events: %q", events)
	}
}

func TestFileSourceMalformedFileBesideGoodOnes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:1"))
	writeFile(t, filepath.Join(dir, "bad.yaml"), "apiVersion: v1\nkind: Pod\nspec: [")
	writeFile(t, filepath.Join(dir, "c.yaml"), manifest("c", "nginx:1"))
	src, out, rec := syncedFileSource(dir)

	src.sync(context.Background())
	if got := names(receive(t, out)); len(got) != 2 || got[0] != "a-node1" || got[1] != "c-node1" {
		t.Fatalf("snapshot = %v, want the two good pods", got)
	}
	expectOneEvent(t, rec, "Warning FailedToDecode", "bad.yaml")

	// Periodic re-reads of the same bad content neither resend nor re-report.
	src.sync(context.Background())
	src.sync(context.Background())
	expectNoSnapshot(t, out)
	if events := drainEvents(rec); len(events) != 0 {
		t.Errorf("bad file reported again: %q", events)
	}

	// New bad content is reported again, once.
	writeFile(t, filepath.Join(dir, "bad.yaml"), manifest("bad", `""`))
	src.sync(context.Background())
	expectNoSnapshot(t, out)
	expectOneEvent(t, rec, "Warning InvalidManifest", "bad.yaml", "spec.containers[0].image: Required value")
}

func TestFileSourceKeepsOldPodWhenManifestBreaks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	writeFile(t, path, manifest("a", "nginx:1"))
	src, out, rec := syncedFileSource(dir)
	src.sync(context.Background())
	good := receive(t, out)

	writeFile(t, path, manifest("a", "nginx:1")[:40]) // a half-saved edit
	src.sync(context.Background())
	expectNoSnapshot(t, out) // the snapshot still holds the old pod: nothing changed
	if got := src.out.last; len(got) != 1 || got[0].UID != good[0].UID {
		t.Fatalf("last snapshot = %v, want the previous pod kept", names(got))
	}
	expectOneEvent(t, rec, "a.yaml")

	writeFile(t, path, manifest("a", "nginx:2"))
	src.sync(context.Background())
	fixed := receive(t, out)
	if len(fixed) != 1 || fixed[0].UID == good[0].UID || fixed[0].Spec.Containers[0].Image != "nginx:2" {
		t.Fatalf("fixed manifest not used: %+v", fixed)
	}

	// Deleting the file removes the pod even though a good version was known.
	writeFile(t, path, "garbage: [")
	src.sync(context.Background())
	expectNoSnapshot(t, out)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	src.sync(context.Background())
	if got := receive(t, out); len(got) != 0 {
		t.Fatalf("snapshot after delete = %v", names(got))
	}
}

func TestFileSourceKeepsOldPodWhileRunning(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	writeFile(t, path, manifest("a", "nginx:1"))
	out, rec := runFileSource(t, dir, time.Hour)
	receiveNames(t, out, "a-node1")

	writeFile(t, path, "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: [")
	// The change is noticed (an event), but the pod stays: no snapshot removes it.
	select {
	case e := <-rec.Events:
		if want := "FailedToDecode"; !strings.Contains(e, want) {
			t.Errorf("event %q lacks %q", e, want)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no event for the broken manifest")
	}
	writeFile(t, filepath.Join(dir, "b.yaml"), manifest("b", "nginx:1"))
	pods := receiveNames(t, out, "a-node1", "b-node1")
	for _, p := range pods {
		if p.Name == "a-node1" && p.Spec.Containers[0].Image != "nginx:1" {
			t.Errorf("kept pod has image %s", p.Spec.Containers[0].Image)
		}
	}
}

func TestFileSourceDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "1.yaml"), manifest("web", "nginx:1"))
	writeFile(t, filepath.Join(dir, "2.yaml"), manifest("web", "nginx:2"))
	src, out, rec := syncedFileSource(dir)
	src.sync(context.Background())
	pods := receive(t, out)
	if len(pods) != 1 || pods[0].Spec.Containers[0].Image != "nginx:1" {
		t.Fatalf("snapshot = %v, want only the first file's pod", names(pods))
	}
	expectOneEvent(t, rec, "InvalidManifest", "2.yaml", `duplicate pod name "default/web-node1"`)
	src.sync(context.Background())
	if events := drainEvents(rec); len(events) != 0 {
		t.Errorf("duplicate reported again: %q", events)
	}
}

func TestFileSourceSingleFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pod.yaml")
	writeFile(t, path, manifest("single", "nginx:1"))
	writeFile(t, filepath.Join(dir, "other.yaml"), manifest("other", "nginx:1"))
	out, _ := runFileSource(t, path, time.Hour)
	receiveNames(t, out, "single-node1")

	writeFile(t, path, manifest("renamed", "nginx:1"))
	receiveNames(t, out, "renamed-node1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	receiveNames(t, out)
	writeFile(t, path, manifest("back", "nginx:1"))
	receiveNames(t, out, "back-node1")
}

func TestFileSourceMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	out, _ := runFileSource(t, dir, 20*time.Millisecond)
	if got := receive(t, out); len(got) != 0 {
		t.Fatalf("first snapshot = %v, want empty", names(got))
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "nginx:1"))
	receiveNames(t, out, "a-node1")
	// Now watched: a later file shows up through the watch or the next re-read.
	writeFile(t, filepath.Join(dir, "b.yaml"), manifest("b", "nginx:1"))
	receiveNames(t, out, "a-node1", "b-node1")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	receiveNames(t, out)
}

func TestFileSourceReReadKeepsSnapshot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	writeFile(t, path, manifest("a", "nginx:1"))
	src, out, _ := syncedFileSource(dir)
	src.sync(context.Background())
	first := receive(t, out)
	// Same content rewritten (new mtime, new comment): same pod, same seen time, nothing sent.
	writeFile(t, path, "# touched\n"+manifest("a", "nginx:1"))
	src.sync(context.Background())
	expectNoSnapshot(t, out)
	if src.out.last[0].Annotations[podutil.AnnotationSeen] != first[0].Annotations[podutil.AnnotationSeen] {
		t.Error("seen time changed on re-read")
	}
}

func TestIgnoredName(t *testing.T) {
	for name, want := range map[string]bool{
		"pod.yaml": false, "pod.json": false, "pod": false,
		".pod.yaml": true, "pod.yaml~": true, ".pod.yaml.swp": true, "pod.yaml.swp": true,
		"#pod.yaml#": true, "pod.yaml.bak": true,
	} {
		if got := ignoredName(name); got != want {
			t.Errorf("ignoredName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFileSourceManifestRemovedAndPutBackRestartsPod(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	writeFile(t, path, manifest("a", "nginx:1"))
	out, _ := runFileSource(t, dir, time.Hour)
	first := receiveNames(t, out, "a-node1")

	// Deleted and written back at once, within one debounce window.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, manifest("a", "nginx:1"))
	receiveNames(t, out) // the deletion is not hidden by the put-back
	again := receiveNames(t, out, "a-node1")
	if again[0].UID != first[0].UID {
		t.Errorf("same manifest, new UID %s (was %s)", again[0].UID, first[0].UID)
	}
}
