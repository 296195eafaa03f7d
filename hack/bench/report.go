package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/hack/buildstamp"
)

// results is everything one invocation measured.
type results struct {
	plan    plan
	smoke   bool
	date    time.Time
	took    time.Duration
	env     environment
	rounds  []round
	closest *subjectResult // the upstream kubelet with PodAndContainerStatsFromCRI: footprint, last round
	untimed *subjectResult // nodelet with --pod-timeline=false: footprint, last round
}

// last is the last round, where density ran.
func (r *results) last() round {
	if len(r.rounds) == 0 {
		return round{}
	}
	return r.rounds[len(r.rounds)-1]
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
		nodelet: buildstamp.Revision(b.o.nodeletBin), kubelet: "not run", loadStart: b.loadStart, loadEnd: buildstamp.LoadAvg()}
	if v, err := b.rt.Version(ctx, &cri.VersionRequest{}); err == nil {
		e.containerd = v.RuntimeName + " " + v.RuntimeVersion + " + " + buildstamp.Runc(strings.TrimPrefix(b.o.endpoint, "unix://"))
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

func memTotal() string {
	for _, line := range strings.Split(readTrim("/proc/meminfo"), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, "MemTotal: %f kB", &kb); err == nil {
			return fmt.Sprintf("%.1f GiB", kb/1024/1024)
		}
	}
	return "unknown"
}

// render writes the whole BENCHMARKS.md.
func render(r *results) string {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format+"\n", args...) }
	title := "Benchmarks"
	if r.smoke {
		title = "Benchmarks (smoke run: small, nodelet only — not a measurement)"
	}
	if r.plan.only != "" {
		title = "Benchmarks (" + r.plan.only + " only, one round: a development run, not the published table)"
	}
	w("# %s\n", title)
	w("nodelet next to the upstream kubelet and the runtime's own floor, measured by one run of `make bench`")
	w("(`go run ./hack/bench`) on the same machine, containerd and API server: %d interleaved rounds, each", r.plan.rounds)
	w("subject once per round in rotated order. Each figure is the median of the rounds with the lowest–highest")
	w("in brackets. Generated %s; the run took %v.\n", r.date.Format("2006-01-02 15:04 MST"), r.took.Round(time.Minute))
	w("| | |\n|---|---|")
	w("| machine | %d CPUs, %s memory, Linux %s |", r.env.cpus, r.env.memory, r.env.kernel)
	w("| load average (1/5/15 min) | %s at the start, %s at the end |", r.env.loadStart, r.env.loadEnd)
	w("| runtime | %s (project containerd) |", r.env.containerd)
	w("| nodelet | commit %s |", r.env.nodelet)
	w("| upstream kubelet | %s |", r.env.kubelet)
	w("| control plane | %s (local: etcd + kube-apiserver, scheduler, controller-manager) |\n", r.env.controlPlane)
	w("## Figures\n")
	renderFigures(w, r)
	if r.plan.breakdownBurst > 0 && r.plan.only != "pulls" {
		w("\n## Where a %d-pod burst's time goes\n", r.plan.breakdownBurst)
		renderBreakdown(w, r)
		w("\nWhere the machine's CPU went meanwhile (floor: its fastest parallelism):\n")
		renderCPU(w, r.rounds, fmt.Sprintf("%d-pod burst", r.plan.breakdownBurst),
			func(f *floorResult) *cpuUse { return f.bursts[r.plan.breakdownBurst].cpu },
			func(s *subjectResult) *cpuUse { return s.bursts[r.plan.breakdownBurst].cpu })
	}
	if r.plan.pullPods > 0 && r.plan.only != "bursts" {
		w("\n## Where the CPU goes while %d pods pull\n", r.plan.pullPods)
		w("The pull figure's runs (floor: its fastest parallelism; the upstream kubelet: its defaults):\n")
		renderCPU(w, r.rounds, fmt.Sprintf("%d pods pulling", r.plan.pullPods),
			func(f *floorResult) *cpuUse { return f.pulls.cpu },
			func(s *subjectResult) *cpuUse { return s.pulls.cpu })
	}
	w("\n## Goals\n")
	renderGoals(w, r)
	w("\n## The machine before each subject\n")
	renderConditions(w, r)
	w("\n## How it is measured\n")
	renderMethod(w, r)
	return sb.String()
}

type writer func(format string, args ...any)

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

func fmtMiB(v float64) string    { return fmt.Sprintf("%.1f MiB", v) }
func fmtPct(v float64) string    { return fmt.Sprintf("%.2f %%", v) }
func fmtPerMin(v float64) string { return fmt.Sprintf("%.1f /min", v) }
func fmtPods(v float64) string   { return fmt.Sprintf("%.0f pods", v) }

// renderConditions lists the machine's state before every subject of every round; a flagged
// row had other work running (idle CPU below the plan's minimum, or foreign pods on the runtime).
func renderConditions(w writer, r *results) {
	w("| round | subject | idle CPU before | load average | foreign sandboxes while it ran | flagged |")
	w("|---|---|---|---|---|---|")
	flagged := 0
	for _, rd := range r.rounds {
		for _, c := range rd.conds {
			mark := "no"
			if c.flagged() {
				mark, flagged = "**yes**", flagged+1
			}
			foreign := c.foreign
			if foreign == "" {
				foreign = "none"
			}
			w("| %d | %s | %.0f %% | %s | %s | %s |", c.round+1, c.subject, c.idlePct, c.load, foreign, mark)
		}
	}
	w("\nEach subject waits (up to 1 min) for the machine to be at least %.0f %% idle over %v before it starts.", r.plan.minIdlePct, quietSample)
	if flagged > 0 {
		w("**%d subject runs were flagged**: their figures may include other work's cost.", flagged)
	}
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}
