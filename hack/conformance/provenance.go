package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nodelet/nodelet/hack/buildstamp"
)

// provenance is what one column of the table came from, written by hack/conformance.sh
// (through -record) into the subject's output directory next to its report.json, so a column
// re-used by a later SUBJECTS=nodelet run still says which build, images and budget it had.
type provenance struct {
	Subject     string            `json:"subject"`
	Invocation  string            `json:"invocation"` // one id per `make conformance` invocation
	Started     time.Time         `json:"started"`
	Checkout    string            `json:"checkout"` // HEAD of the checkout the harness ran from
	Binary      string            `json:"binary"`
	BinarySHA   string            `json:"binarySHA256"`
	Version     string            `json:"version"`
	Machine     string            `json:"machine"`
	Kernel      string            `json:"kernel"`
	Runtime     string            `json:"runtime"`
	Timeout     string            `json:"timeout"`
	Procs       string            `json:"procs"`
	Focus       string            `json:"focus,omitempty"`
	Images      map[string]string `json:"images"`                // name → digest when the suite started
	ImagesAfter map[string]string `json:"imagesAfter,omitempty"` // the same when it ended
}

// suiteImagePrefix names the images the suite runs: it asks for registry.k8s.io names only
// (hack/images.sh conformance builds them under those names).
const suiteImagePrefix = "registry.k8s.io/"

// parseImages reads `ctr images ls` output into name → digest for the suite's images.
func parseImages(out string) map[string]string {
	images := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.HasPrefix(f[0], suiteImagePrefix) && strings.HasPrefix(f[2], "sha256:") {
			images[f[0]] = f[2]
		}
	}
	return images
}

func listImages(socket string) (map[string]string, error) {
	out, err := exec.Command("ctr", "--address", socket, "-n", "k8s.io", "images", "ls").Output()
	if err != nil {
		return nil, fmt.Errorf("ctr images ls: %w", err)
	}
	return parseImages(string(out)), nil
}

// runtimeVersion is containerd's server version as ctr reports it, and its runc's.
func runtimeVersion(socket string) string {
	out, err := exec.Command("ctr", "--address", socket, "version").Output()
	if err != nil {
		return "unknown"
	}
	_, server, _ := strings.Cut(string(out), "Server:")
	for _, line := range strings.Split(server, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Version:"); ok {
			return "containerd " + strings.TrimSpace(v) + " + " + buildstamp.Runc(socket)
		}
	}
	return "unknown"
}

// recordStart writes the provenance of a run about to start.
func recordStart(path string, p provenance, socket string) error {
	images, err := listImages(socket)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	p.Started = time.Now().UTC().Truncate(time.Second)
	if p.Checkout == "" {
		p.Checkout = checkoutHead(".")
	}
	p.BinarySHA = fileSHA(p.Binary)
	if p.Version == "" {
		p.Version = "no VCS stamp in the binary"
		if rev := buildstamp.Stamped(p.Binary); rev != "" {
			p.Version = "commit " + rev
		}
	}
	p.Machine, p.Kernel = host, readTrim("/proc/sys/kernel/osrelease")
	p.Runtime, p.Images = runtimeVersion(socket), images
	return writeJSON(path, p)
}

// recordEnd adds the images as they were when the run ended: a change mid-run shows.
func recordEnd(path, socket string) error {
	p, err := readProvenance(path)
	if err != nil {
		return err
	}
	if p.ImagesAfter, err = listImages(socket); err != nil {
		return err
	}
	return writeJSON(path, *p)
}

func readProvenance(path string) (*provenance, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p provenance
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// checkoutHead reads .git/HEAD and the ref it names without running git (12 hex digits). In a
// linked worktree .git is a file naming the worktree's git directory, whose HEAD is its own and
// whose refs are in the repository's common directory.
func checkoutHead(root string) string {
	gitDir := filepath.Join(root, ".git")
	if d, ok := strings.CutPrefix(readTrim(gitDir), "gitdir: "); ok {
		gitDir = relativeTo(root, d)
	}
	refsDir := gitDir
	if c := readTrim(filepath.Join(gitDir, "commondir")); c != "" {
		refsDir = relativeTo(gitDir, c)
	}
	head := readTrim(filepath.Join(gitDir, "HEAD"))
	ref, isRef := strings.CutPrefix(head, "ref: ")
	id := head
	if isRef {
		id = readTrim(filepath.Join(refsDir, ref))
		for _, line := range strings.Split(readTrim(filepath.Join(refsDir, "packed-refs")), "\n") {
			if h, name, ok := strings.Cut(line, " "); ok && name == ref && id == "" {
				id = h
			}
		}
	}
	if len(id) < 12 {
		return "unknown"
	}
	return id[:12]
}

// relativeTo resolves a path git wrote relative to dir.
func relativeTo(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

func fileSHA(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown"
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func readTrim(path string) string {
	data, _ := os.ReadFile(path)
	return strings.TrimSpace(string(data))
}

// sameSetup compares two columns' machine, runtime and images: the report claims "same
// machine, runtime and images" only when differences is empty.
func sameSetup(a, b *provenance) (differences []string) {
	if a == nil || b == nil {
		return []string{"a column has no provenance record (run.json), so nothing about its setup is known"}
	}
	if a.Machine != b.Machine || a.Kernel != b.Kernel {
		differences = append(differences, fmt.Sprintf("machine %s/%s vs %s/%s", a.Machine, a.Kernel, b.Machine, b.Kernel))
	}
	if a.Runtime != b.Runtime {
		differences = append(differences, fmt.Sprintf("runtime %s vs %s", a.Runtime, b.Runtime))
	}
	for _, p := range []*provenance{a, b} {
		if d, _ := imagesDuringRun(p); len(d) > 0 {
			differences = append(differences, fmt.Sprintf("images changed during the %s run: %s",
				p.Subject, strings.Join(d, "; ")))
		}
	}
	if len(a.Images) == 0 {
		differences = append(differences, "no image digests recorded")
	} else if d := imageDiffs(a.Images, b.Images); len(d) > 0 {
		differences = append(differences, "images differ: "+strings.Join(d, "; "))
	}
	return differences
}

// imagesDuringRun compares what p's run started with to what the runtime held after it. An
// image whose digest differs is changed; one gone afterwards is only removed (the specs ran on the
// one recorded at the start; the disk pressure specs make the kubelet's image GC remove unused ones).
func imagesDuringRun(p *provenance) (changed, removed []string) {
	if p == nil || p.ImagesAfter == nil {
		return nil, nil
	}
	for _, n := range slices.Sorted(maps.Keys(p.Images)) {
		after, ok := p.ImagesAfter[n]
		switch {
		case !ok:
			removed = append(removed, n)
		case after != p.Images[n]:
			changed = append(changed, fmt.Sprintf("%s %s vs %s", n, shortDigest(p.Images[n]), shortDigest(after)))
		}
	}
	return changed, removed
}

// imageDiffs lists the images whose digests differ between two records.
func imageDiffs(a, b map[string]string) []string {
	names := slices.Sorted(maps.Keys(a))
	for _, n := range slices.Sorted(maps.Keys(b)) { // sorted: a re-render from kept results is the same page
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	var out []string
	for _, n := range names {
		if a[n] != b[n] && !aliasHeld(a[n], b[n], a, b) {
			out = append(out, fmt.Sprintf("%s %s vs %s", n, shortDigest(a[n]), shortDigest(b[n])))
		}
	}
	return out
}

// aliasHeld reports whether a name one record lacks stands for content the record holds under
// another name (the runtime drops a by-digest alias while keeping the tag): the same image.
func aliasHeld(digestA, digestB string, a, b map[string]string) bool {
	switch {
	case digestA == "":
		return slices.Contains(slices.Collect(maps.Values(a)), digestB)
	case digestB == "":
		return slices.Contains(slices.Collect(maps.Values(b)), digestA)
	}
	return false
}

func shortDigest(d string) string {
	if d == "" {
		return "absent"
	}
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
