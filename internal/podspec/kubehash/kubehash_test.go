package kubehash

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestContainerHashMatchesUpstream wants, for every container of the corpus, the hash the
// upstream kubelet wrote (testdata/golden.json, from test/harness/cmd/handovergolden).
// The static pod UIDs are checked where nodelet decodes manifests (internal/pod/source).
func TestContainerHashMatchesUpstream(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		File   string            `json:"file"`
		Hashes map[string]string `json:"hashes"`
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range recs {
		manifest, err := os.ReadFile(filepath.Join("testdata", "manifests", r.File))
		if err != nil {
			t.Fatal(err)
		}
		var pod v1.Pod
		if err := yaml.Unmarshal(manifest, &pod); err != nil {
			t.Fatal(err)
		}
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if got := FormatHash(ContainerHash(&c)); got != r.Hashes[c.Name] {
				t.Errorf("%s: container %s hash %s, upstream wrote %s", r.File, c.Name, got, r.Hashes[c.Name])
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d containers: want the whole corpus", checked)
	}
}

// Only the name and image count: whatever else changes (resources resized in place, a field
// the API adds), a running container is still the one the spec asks for.
func TestContainerHashIsNameAndImageOnly(t *testing.T) {
	a := v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "1"}}
	b := v1.Container{Name: "app", Image: "busybox:1.36", Args: []string{"x"}, TTY: true}
	if ContainerHash(&a) != ContainerHash(&b) {
		t.Error("fields other than name and image changed the hash")
	}
	b.Image = "busybox:1.37"
	if ContainerHash(&a) == ContainerHash(&b) {
		t.Error("the image did not change the hash")
	}
}
