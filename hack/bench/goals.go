package main

import (
	"fmt"
	"strings"
)

// goal is one performance target and how nodelet did against it, on the medians of the rounds.
type goal struct {
	name, target string
	measured     string // "–" when this run did not measure it
	met          bool
}

func renderGoals(w writer, r *results) {
	w("| goal | target | nodelet | met |")
	w("|---|---|---|---|")
	for _, g := range goals(r) {
		mark := "–"
		if !strings.HasPrefix(g.measured, "–") {
			mark = map[bool]string{true: "✓", false: "✗"}[g.met]
		}
		w("| %s | %s | %s | %s |", g.name, g.target, g.measured, mark)
	}
}

// versus is a goal "a ≤ factor × b", shown as "0.87× = 1.2 s vs 1.4 s".
func versus(name, target string, a, b sample, factor float64, unit func(float64) string) goal {
	g := goal{name: name, target: target, measured: "–"}
	if len(a) == 0 || len(b) == 0 || b.median() <= 0 {
		return g
	}
	g.measured = fmt.Sprintf("%s = %s vs %s", ratio(a.median(), b.median()), unit(a.median()), unit(b.median()))
	g.met = a.median() <= factor*b.median()
	return g
}

// atMost is a goal "a ≤ limit".
func atMost(name, target string, a sample, limit float64, unit func(float64) string) goal {
	g := goal{name: name, target: target, measured: "–"}
	if len(a) > 0 {
		g.measured, g.met = unit(a.median()), a.median() <= limit
	}
	return g
}

func goals(r *results) []goal {
	byName := map[string]figure{}
	for _, f := range figures(r) {
		byName[f.name] = f
	}
	p := r.plan
	one := byName[fmt.Sprintf("one pod on an idle node (median of %d per round)", p.singles)]
	restart := byName["first restart: finishedAt → new startedAt (runtime clock)"]
	all100, p50, p99 := byName["100-pod burst: all Running (from the first create call)"], byName["100-pod burst: p50"], byName["100-pod burst: p99"]
	gs := []goal{
		atMost("one pod on an idle node", "≤ 0.3 s", one.nodelet, 0.3, fmtSec),
		versus("one pod on an idle node", "≤ 1.1× the floor", one.nodelet, one.floor, 1.1, fmtSec),
		versus("100-pod burst, all Running", "≤ 1.05× the floor", all100.nodelet, all100.floor, 1.05, fmtSec),
		versus("100-pod burst, p50", "≤ 0.6× upstream", p50.nodelet, p50.upstream, 0.6, fmtSec),
		versus("100-pod burst, p99", "≤ upstream", p99.nodelet, p99.upstream, 1, fmtSec),
		atMost("first restart after death (finishedAt → startedAt)", "≤ 0.2 s", restart.nodelet, 0.2, fmtSec),
	}
	rss := goal{name: "RSS at 110 running pods", target: "≤ 40 MiB", measured: "–"}
	cpu := goal{name: "CPU at 110 idle pods, both kubelets running their eviction managers", target: "≤ 0.5× upstream", measured: "–"}
	tlRSS := goal{name: "RSS at 110 running pods with the pod timeline", target: "≤ 1.05× without it", measured: "–"}
	tlCPU := goal{name: "CPU at 110 running pods with the pod timeline", target: "≤ 1.05× without it", measured: "–"}
	if p.footprintPods == 110 {
		rssName := fmt.Sprintf("RSS at 110 running pods (mean over %v)", p.footprintWindow)
		cpuName := fmt.Sprintf("CPU at 110 running pods (%% of one core over %v)", p.footprintWindow)
		rssFig, cpuFig := byName[rssName], byName[cpuName]
		rss = atMost(rss.name, rss.target, rssFig.nodelet, 40, fmtMiB)
		if anon := byName["  of which anonymous (RssAnon) at 110 running pods"].nodelet; rss.measured != "–" && len(anon) > 0 {
			// What the process allocated, apart from the pages of its own binary it maps.
			rss.measured += fmt.Sprintf(" (anonymous %s; the rest is mostly the binary's mapped pages)", fmtMiB(anon.median()))
		}
		cpu = versus(cpu.name, cpu.target, cpuFig.nodelet, cpuFig.upstream, 0.5, fmtPct)
		// The same round's figure with the timeline on, against its run without it.
		last := func(s sample) sample { return s[max(len(s)-1, 0):] }
		offRSS := byName["  "+rssName+", nodelet with --pod-timeline=false"].nodelet
		offCPU := byName["  "+cpuName+", nodelet with --pod-timeline=false"].nodelet
		tlRSS = versus(tlRSS.name, tlRSS.target, last(rssFig.nodelet), offRSS, 1.05, fmtMiB)
		tlCPU = versus(tlCPU.name, tlCPU.target, last(cpuFig.nodelet), offCPU, 1.05, fmtPct)
	}
	api := byName[fmt.Sprintf("API requests a minute, %d pods with a ConfigMap and a Secret each (last round)", p.footprintPods)]
	csiAll := byName[fmt.Sprintf("%d pods with a CSI volume each (test driver, attach required, claims bound beforehand): all Running (from the first create call)", p.csiPods)]
	gs = append(gs, versus(fmt.Sprintf("%d pods with a CSI volume each, all Running", p.csiPods), "≤ upstream", csiAll.nodelet, csiAll.upstream, 1, fmtSec))
	if p.draPods > 0 {
		draAll := byName[draFigureName(p, "all Running (from the first create call)")]
		gs = append(gs, versus(fmt.Sprintf("%d pods with a DRA claim each, all Running", p.draPods), "≤ upstream", draAll.nodelet, draAll.upstream, 1, fmtSec))
	}
	if p.pullPods > 0 {
		gs = append(gs, pullGoal(r, byName[pullFiguresName(p, "all Running (from the first create call)")]))
	}
	gs = append(gs, versus("API requests a minute, pods with a ConfigMap and a Secret each", "≤ upstream", api.nodelet, api.upstream, 1, fmtPerMin))
	dens := goal{name: fmt.Sprintf("%d pods Running with the node Ready", p.densityPods), target: "all Running, Ready throughout", measured: "–"}
	if n := r.last().nodelet; n != nil && n.density != nil {
		d := n.density
		dens.measured = fmt.Sprintf("%d/%d Running, Ready throughout: %s", d.running, d.pods, densityReady(d))
		dens.met = d.running == d.pods && d.ready
	}
	return append(gs, rss, cpu, tlRSS, tlCPU, dens)
}

// pullGoal compares nodelet's pull burst with the upstream kubelet's default rounds in which
// its rate limit refused no pull: a refused pull waits out a 10 s back-off, which says nothing
// of how fast either kubelet pulls.
func pullGoal(r *results, pulls figure) goal {
	unrefused := fromSubjects(r.rounds, upstreamOf, func(s *subjectResult) (float64, bool) {
		return s.pulls.all.Seconds(), s.pulls.all > 0 && s.pulls.refused == 0
	})
	g := versus(fmt.Sprintf("%d pods with an image of their own each pulled, all Running", r.plan.pullPods),
		"≤ 0.5× upstream (its default, serial pulls)", pulls.nodelet, unrefused, 0.5, fmtSec)
	if refusedRounds := len(pulls.upstream) - len(unrefused); refusedRounds > 0 {
		if g.measured == "–" {
			g.measured = "– (no upstream round to compare with)"
		}
		g.measured += fmt.Sprintf("; left out: the %d of %d upstream rounds in which its rate limit refused pulls (%q, then a 10 s back-off)",
			refusedRounds, len(pulls.upstream), pullRefusal)
	}
	if len(unrefused) > 0 && len(pulls.floor) > 0 {
		// How close the runtime itself comes to the target bounds what any kubelet can show.
		g.measured += fmt.Sprintf("; the runtime's own floor: %s", ratioCell(pulls.floor, unrefused))
	}
	return g
}
