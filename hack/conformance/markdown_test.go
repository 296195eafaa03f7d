package main

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// render writes the report of the two fixture columns, after edit adjusts them.
func render(t *testing.T, edit func(n, u *run)) string {
	t.Helper()
	n, u := mustRead(t, "testdata/nodelet/report.json"), mustRead(t, "testdata/kubelet/report.json")
	if edit != nil {
		edit(n, u)
	}
	return writePage(&report{nodelet: n, upstream: u, causes: testCauses(t), podErrs: podErrors("testdata/nodelet.log"),
		generated: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
}

// writePage is the page rp writes.
func writePage(rp *report) string {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	rp.write(w)
	w.Flush()
	return b.String()
}

func TestSharedFailureShowsBothMessages(t *testing.T) {
	out := render(t, nil)
	_, both, _ := strings.Cut(out, "## Failed on both")
	both, _, _ = strings.Cut(both, "## All specs")
	for _, want := range []string{
		"  - nodelet (failed): cause: shell drops data-1 — suite: expected \"data-1=value-1\" in container output: Expected <string>: HOSTNAME=nodelet-side",
		"  - upstream kubelet (failed): cause: shell drops data-1 — suite: expected \"data-1=value-1\" in container output: Expected <string>: HOSTNAME=upstream-side",
		"  - nodelet (timed out): cause: nodelet-only cause of the spec timeout — suite: A spec timeout occurred",
		"  - upstream kubelet (failed): suite: some other failure",
	} {
		if !strings.Contains(both, want) {
			t.Errorf("Failed on both lacks %q:\n%s", want, both)
		}
	}
	_, only, _ := strings.Cut(out, "## Nodelet-only failures")
	only, _, _ = strings.Cut(only, "## Failed on both")
	if !strings.Contains(only, specHang+" (nodelet: timed out, upstream: passed): nodelet logged: create sandbox: no CNI") {
		t.Errorf("the hung spec is not a nodelet-only timed-out failure:\n%s", only)
	}
}

func TestDigestMismatchHeader(t *testing.T) {
	out := render(t, nil)
	if strings.Contains(out, "Both ran on the same machine, runtime and images") {
		t.Error("claims the same images although agnhost's digest differs")
	}
	for _, want := range []string{
		"did NOT run on the same machine, runtime and images",
		"registry.k8s.io/e2e-test-images/agnhost:2.53 sha256:222222222222 vs sha256:333333333333",
		"different `make conformance` invocations: nodelet's from 20260101T000000Z-1",
		"TIMEOUT 10m vs 2h",
		"| TIMEOUT | 10m (ran out) | 2h |",
		"| checkout HEAD (uncommitted changes not detected) | 0123456789ab | fedcba987654 |",
		"| nodelet | 1 | 3 | 2 | 1 | 1 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestSameImagesHeader(t *testing.T) {
	out := render(t, func(n, u *run) {
		u.prov.Images = maps.Clone(n.prov.Images)
		u.prov.Invocation, u.prov.Timeout, u.prov.Focus = n.prov.Invocation, n.prov.Timeout, n.prov.Focus
	})
	for _, want := range []string{
		"Both columns come from one `make conformance` invocation (20260101T000000Z-1).",
		"Both ran on the same machine, runtime and images (identical recorded image digests).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "budgets or focus differ") || strings.Contains(out, "did NOT") {
		t.Error("identical records reported as different")
	}
}

func TestNoProvenanceMakesNoClaim(t *testing.T) {
	out := render(t, func(_, u *run) { u.prov = nil })
	if strings.Contains(out, "Both ran on the same") || !strings.Contains(out, "| invocation | 20260101T000000Z-1 | not recorded |") {
		t.Errorf("a column without run.json: %s", out[:600])
	}
}

func TestImagesChangedDuringRun(t *testing.T) {
	out := render(t, func(n, u *run) {
		u.prov.Images = maps.Clone(n.prov.Images)
		n.prov.ImagesAfter = map[string]string{"registry.k8s.io/pause:3.10": "sha256:9999999999999999"}
	})
	if !strings.Contains(out, "images changed during the nodelet run") {
		t.Error("a change of images within a run is not reported")
	}
}

func TestImagesRemovedDuringRunAreNotAChange(t *testing.T) {
	out := render(t, func(n, u *run) {
		u.prov.Images = maps.Clone(n.prov.Images)
		u.prov.Invocation, u.prov.Timeout, u.prov.Focus = n.prov.Invocation, n.prov.Timeout, n.prov.Focus
		n.prov.ImagesAfter = map[string]string{}
	})
	if !strings.Contains(out, "Both ran on the same machine, runtime and images") {
		t.Error("images removed during a run reported as a different setup")
	}
	if !strings.Contains(out, "images the nodelet run started with were removed from the runtime") {
		t.Error("images removed during a run not reported")
	}
}

func TestAliasOfAHeldDigestIsNotADifference(t *testing.T) {
	a := map[string]string{"agnhost:2.53": "sha256:91f4", "agnhost@sha256:91f4": "sha256:91f4"}
	b := map[string]string{"agnhost:2.53": "sha256:91f4"}
	if d := imageDiffs(a, b); len(d) != 0 {
		t.Errorf("a by-digest alias of a held image counted as a difference: %v", d)
	}
	b["agnhost:2.53"] = "sha256:0000"
	if d := imageDiffs(a, b); len(d) != 2 {
		t.Errorf("different content not reported under both names: %v", d)
	}
}

func TestParseImages(t *testing.T) {
	out := `REF TYPE DIGEST SIZE PLATFORMS LABELS
nodelet.local/busybox:1.36 application/vnd.docker.distribution.manifest.v2+json sha256:27d4 3.6 MiB linux/amd64 x
registry.k8s.io/pause:3.10 application/vnd.docker.distribution.manifest.v2+json sha256:f709 1.5 MiB linux/amd64 x
sha256:4ad2 application/vnd.docker.distribution.manifest.v2+json sha256:f709 1.5 MiB linux/amd64 x
`
	got := parseImages(out)
	if len(got) != 1 || got["registry.k8s.io/pause:3.10"] != "sha256:f709" {
		t.Errorf("parseImages = %v", got)
	}
}

// A failure of the upstream kubelet alone is listed with its cause, so the columns' difference
// is explained whichever kubelet it counts against.
func TestUpstreamOnlyFailureShowsItsCause(t *testing.T) {
	out := render(t, func(n, u *run) {
		u.results[specPods] = result{state: stateFailed, message: "RuntimeClass exists", full: "RuntimeClass exists"}
	})
	_, only, _ := strings.Cut(out, "## Upstream-only failures")
	only, _, _ = strings.Cut(only, "## Failed on both")
	want := "- " + specPods + " (upstream: failed, nodelet: passed): cause: upstream-side cause, shown only where the upstream kubelet fails the spec — suite: RuntimeClass exists"
	if !strings.Contains(only, want) {
		t.Errorf("Upstream-only failures lacks %q:\n%s", want, only)
	}
	if strings.Contains(only, specEnv) {
		t.Errorf("a failure on both is listed as upstream-only:\n%s", only)
	}
}
