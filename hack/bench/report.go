package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// results is everything one invocation measured.
type results struct {
	plan     plan
	smoke    bool
	date     time.Time
	env      environment
	floor    *floorResult
	nodelet  *subjectResult
	upstream *subjectResult // nil with -smoke
}

// environment names the machine and the versions measured.
type environment struct {
	cpus                                       int
	memory, kernel                             string
	loadStart, loadEnd                         string // /proc/loadavg: 1, 5, 15 min
	containerd, nodelet, kubelet, controlPlane string
}

func (b *bench) environment(ctx context.Context) environment {
	e := environment{cpus: runtime.NumCPU(), memory: memTotal(), kernel: readTrim("/proc/sys/kernel/osrelease"),
		nodelet: binaryRevision(b.o.nodeletBin), kubelet: "not run", loadStart: b.loadStart, loadEnd: loadAvg()}
	if v, err := b.rt.Version(ctx, &cri.VersionRequest{}); err == nil {
		e.containerd = v.RuntimeName + " " + v.RuntimeVersion
	}
	if b.p.upstream {
		out, _ := exec.Command(b.o.kubeletBin, "--version").Output()
		e.kubelet = strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	}
	if v, err := b.kube.Discovery().ServerVersion(); err == nil {
		e.controlPlane = v.GitVersion
	}
	return e
}

// binaryRevision is the VCS revision Go stamped into the binary ("+dirty" if modified), or,
// when it was built with -buildvcs=false, the checkout's HEAD.
func binaryRevision(path string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	rev, dirty := "", ""
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return gitHead() + " (HEAD of the checkout; the binary carries no VCS stamp)"
	}
	return rev + dirty
}

// checkStamp refuses a binary that does not say which commit it is, or one built from a
// modified tree, unless allowDirty: a published figure must name what it measured.
func checkStamp(path string, allowDirty bool) error {
	rev := binaryRevision(path)
	switch {
	case strings.Contains(rev, "no VCS stamp") || rev == "unknown":
		return fmt.Errorf("%s carries no VCS stamp: build it with `make build` (go build -buildvcs=true) in a git checkout", path)
	case strings.HasSuffix(rev, "+dirty") && !allowDirty:
		return fmt.Errorf("%s was built from a modified tree (%s): commit first, or pass -allow-dirty for a development run", path, rev)
	}
	return nil
}

// gitHead reads .git/HEAD and the ref it names, without running git.
func gitHead() string {
	head := readTrim(".git/HEAD")
	ref, isRef := strings.CutPrefix(head, "ref: ")
	if !isRef {
		return short(head)
	}
	if id := readTrim(filepath.Join(".git", ref)); id != "" {
		return short(id)
	}
	for _, line := range strings.Split(readTrim(".git/packed-refs"), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && name == ref {
			return short(id)
		}
	}
	return "unknown"
}

func short(id string) string {
	if len(id) < 12 {
		return "unknown"
	}
	return id[:12]
}

// loadAvg is the 1, 5 and 15 minute load average: other work on the machine skews the figures.
func loadAvg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func memTotal() string {
	for _, line := range strings.Split(readTrim("/proc/meminfo"), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, "MemTotal: %f kB", &kb); err == nil {
			return fmt.Sprintf("%.1f GiB", kb/1024/1024)
		}
	}
	return "unknown"
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// render writes the whole BENCHMARKS.md.
func render(r *results) string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format+"\n", args...) }
	title := "Benchmarks"
	if r.smoke {
		title = "Benchmarks (smoke run: small, nodelet only — not a measurement)"
	}
	w("# %s\n", title)
	w("nodelet next to the upstream kubelet and the runtime's own floor, measured in one run of `make bench`")
	w("(`go run ./hack/bench`) on the same machine, containerd and API server. Generated %s.\n", r.date.Format("2006-01-02 15:04 MST"))
	w("| | |\n|---|---|")
	w("| machine | %d CPUs, %s memory, Linux %s |", r.env.cpus, r.env.memory, r.env.kernel)
	w("| load average (1/5/15 min) | %s at the start, %s at the end |", r.env.loadStart, r.env.loadEnd)
	w("| runtime | %s + runc (project containerd) |", r.env.containerd)
	w("| nodelet | commit %s |", r.env.nodelet)
	w("| upstream kubelet | %s |", r.env.kubelet)
	w("| control plane | %s (local: etcd + kube-apiserver, scheduler, controller-manager) |\n", r.env.controlPlane)
	w("## Figures\n")
	renderFigures(w, r)
	w("\n## Goals of issue 5\n")
	renderGoals(w, r)
	w("\n## How it is measured\n")
	renderMethod(w, r)
	return sb.String()
}

type writer func(format string, args ...any)

func renderFigures(w writer, r *results) {
	p := r.plan
	w("| figure | raw CRI floor | nodelet | upstream kubelet | nodelet / upstream | nodelet / floor |")
	w("|---|---|---|---|---|---|")
	n, u, f := r.nodelet, r.upstream, r.floor
	row := func(name string, floor, nv, uv []float64, unit func(float64) string) {
		w("| %s | %s | %s | %s | %s | %s |", name, joinVals(floor, unit), joinVals(nv, unit), joinVals(uv, unit),
			ratios(nv, uv), ratios(nv, floor))
	}
	secs := func(d ...time.Duration) []float64 { return durs(d) }
	row(fmt.Sprintf("one pod on an idle node (median of %d)", p.singles), secs(f.single), secs(n.single), pick(u, func(s *subjectResult) []float64 { return secs(s.single) }), fmtSec)
	row("floor's one pod: RunPodSandbox / CreateContainer / StartContainer", secs(f.steps.sandbox, f.steps.create, f.steps.start), nil, nil, fmtSec)
	for _, size := range p.bursts {
		get := func(l latencies) []float64 { return secs(l.pct(50), l.pct(90), l.pct(99), l.all) }
		row(fmt.Sprintf("%d-pod burst: p50 / p90 / p99 / all", size), get(f.bursts[size]), get(n.bursts[size]),
			pick(u, func(s *subjectResult) []float64 { return get(s.bursts[size]) }), fmtSec)
	}
	restart := func(s *subjectResult) []float64 { return secs(s.restart.runtime) }
	row("first restart: finishedAt → new startedAt (runtime clock)", nil, restart(n), pick(u, restart), fmtSec)
	apiRestart := func(s *subjectResult) []float64 { return secs(s.restart.api) }
	row("first restart: the same from the API status (1 s resolution)", nil, apiRestart(n), pick(u, apiRestart), fmtSec)
	seen := func(s *subjectResult) []float64 { return secs(s.restart.watch) }
	row("first restart: death → Running again seen by a watch", nil, seen(n), pick(u, seen), fmtSec)
	win := p.footprintWindow
	for _, fp := range []struct {
		name string
		get  func(*subjectResult) footprint
	}{{"0 pods", func(s *subjectResult) footprint { return s.idle }},
		{fmt.Sprintf("%d running pods", p.footprintPods), func(s *subjectResult) footprint { return s.loaded }}} {
		rss := func(s *subjectResult) []float64 { return []float64{fp.get(s).rssMiB} }
		anon := func(s *subjectResult) []float64 { return []float64{fp.get(s).anonMiB} }
		cpu := func(s *subjectResult) []float64 { return []float64{fp.get(s).cpuPct} }
		row(fmt.Sprintf("RSS at %s (mean over %v)", fp.name, win), nil, rss(n), pick(u, rss), fmtMiB)
		row(fmt.Sprintf("  of which anonymous (RssAnon) at %s", fp.name), nil, anon(n), pick(u, anon), fmtMiB)
		row(fmt.Sprintf("CPU at %s (%% of one core over %v)", fp.name, win), nil, cpu(n), pick(u, cpu), fmtPct)
	}
	if p.densityPods > 0 {
		renderDensity(w, p.densityPods, n.density, pickDensity(u))
	}
}

func renderDensity(w writer, pods int, n, u *densityResult) {
	all := func(d *densityResult) []float64 {
		if d == nil || d.running < d.pods {
			return nil
		}
		return durs([]time.Duration{d.all})
	}
	w("| density: %d pods, creation → all Running | – | %s | %s | %s | – |", pods, densityAll(n), densityAll(u), ratios(all(n), all(u)))
	w("| density: node Ready throughout | – | %s | %s | – | – |", densityReady(n), densityReady(u))
	p99 := func(d *densityResult) []float64 {
		if d == nil || d.plegP99 < 0 || d.plegOver {
			return nil
		}
		return []float64{d.plegP99}
	}
	w("| density: PLEG relist p99 (kubelet_pleg_relist_duration_seconds) | – | %s | %s | %s | – |",
		densityPLEG(n), densityPLEG(u), ratios(p99(n), p99(u)))
}

func densityAll(d *densityResult) string {
	switch {
	case d == nil:
		return "–"
	case d.running < d.pods:
		return fmt.Sprintf("only %d/%d Running after 10 min", d.running, d.pods)
	}
	return fmtSec(d.all.Seconds())
}

func densityReady(d *densityResult) string {
	switch {
	case d == nil:
		return "–"
	case d.ready:
		return "yes"
	}
	return "no: " + d.notReady
}

func densityPLEG(d *densityResult) string {
	if d == nil {
		return "–"
	}
	return plegText(d)
}

// pick applies get to s, or returns nil when the subject was not run.
func pick(s *subjectResult, get func(*subjectResult) []float64) []float64 {
	if s == nil {
		return nil
	}
	return get(s)
}

func pickDensity(s *subjectResult) *densityResult {
	if s == nil {
		return nil
	}
	return s.density
}

func durs(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

func joinVals(vs []float64, unit func(float64) string) string {
	if len(vs) == 0 {
		return "–"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = unit(v)
	}
	return strings.Join(parts, " / ")
}

// ratios divides a by b element-wise: "0.52× / 0.61×".
func ratios(a, b []float64) string {
	if len(a) == 0 || len(a) != len(b) {
		return "–"
	}
	parts := make([]string, len(a))
	for i := range a {
		parts[i] = ratio(a[i], b[i])
	}
	return strings.Join(parts, " / ")
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func fmtSec(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.3f s", s)
	}
	return fmt.Sprintf("%.2f s", s)
}

func fmtMiB(v float64) string { return fmt.Sprintf("%.1f MiB", v) }
func fmtPct(v float64) string { return fmt.Sprintf("%.2f %%", v) }
