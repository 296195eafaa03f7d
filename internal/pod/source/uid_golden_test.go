package source

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/podspec/kubehash"
	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// goldenRecord is one line of what the upstream kubelet computed for a corpus manifest
// (test/harness/cmd/handovergolden).
type goldenRecord struct {
	File     string            `json:"file"`
	Source   string            `json:"source"`
	Location string            `json:"location"`
	UID      string            `json:"uid"`
	Name     string            `json:"name"`
	Hashes   map[string]string `json:"hashes"`
}

const goldenNode = "golden-node1"

// TestStaticPodUIDMatchesUpstream reads each corpus manifest as nodelet reads static pods and
// wants the UID, name and container hashes the upstream kubelet gave it, so a node handed
// over in either direction keeps its static pods (and their containers) running.
func TestStaticPodUIDMatchesUpstream(t *testing.T) {
	dir := filepath.Join("..", "..", "podspec", "kubehash", "testdata")
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []goldenRecord
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) < 10 {
		t.Fatalf("golden holds %d records: want the whole corpus, read from files and URLs", len(recs))
	}
	for _, r := range recs {
		t.Run(r.Source+"/"+r.File, func(t *testing.T) {
			manifest, err := os.ReadFile(filepath.Join(dir, "manifests", r.File))
			if err != nil {
				t.Fatal(err)
			}
			source := podutil.FileSource
			if r.Source == "url" {
				source = podutil.HTTPSource
			}
			pods, err := newStaticPods(goldenNode, source).fromBody(manifest, r.Location)
			if err != nil {
				t.Fatal(err)
			}
			pod := pods[0]
			if string(pod.UID) != r.UID || pod.Name != r.Name {
				if d := os.Getenv("KUBEHASH_DUMP"); d != "" {
					again, _ := decodePods(manifest)
					SetPodDefaults(again[0])
					text, _ := kubehash.HashedText(again[0])
					_ = os.WriteFile(filepath.Join(d, r.File+".txt"), []byte(text), 0o644)
				}
				t.Errorf("pod %s uid %s: upstream made %s uid %s", pod.Name, pod.UID, r.Name, r.UID)
			}
			for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for i := range list {
					c := &list[i]
					if got := kubehash.FormatHash(kubehash.ContainerHash(c)); got != r.Hashes[c.Name] {
						t.Errorf("container %s hash %s: upstream wrote %s", c.Name, got, r.Hashes[c.Name])
					}
				}
			}
		})
	}
}
