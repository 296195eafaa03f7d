package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// figure is one row of the figures table: a sample per column.
type figure struct {
	name                     string
	floor, nodelet, upstream sample
	unit                     func(float64) string
}

func renderFigures(w writer, r *results) {
	w("| figure | raw CRI floor | nodelet | upstream kubelet | nodelet / upstream | nodelet / floor |")
	w("|---|---|---|---|---|---|")
	for _, f := range figures(r) {
		w("| %s | %s | %s | %s | %s | %s |", f.name, f.floor.cell(f.unit), f.nodelet.cell(f.unit), f.upstream.cell(f.unit),
			ratioCell(f.nodelet, f.upstream), ratioCell(f.nodelet, f.floor))
	}
	renderDensity(w, r)
	renderAPIVerbs(w, r)
}

// secs turns a duration getter into a sample getter.
func secs[T any](get func(T) time.Duration) func(T) (float64, bool) {
	return func(v T) (float64, bool) { d := get(v); return d.Seconds(), d > 0 }
}

// figures are the latency and footprint rows, in the table's order.
func figures(r *results) []figure {
	p, rs := r.plan, r.rounds
	both := func(name string, unit func(float64) string, get func(*subjectResult) (float64, bool)) figure {
		return figure{name: name, unit: unit, nodelet: fromSubjects(rs, nodeletOf, get), upstream: fromSubjects(rs, upstreamOf, get)}
	}
	one := both(fmt.Sprintf("one pod on an idle node (median of %d per round)", p.singles), fmtSec,
		secs(func(s *subjectResult) time.Duration { return s.single }))
	one.floor = fromFloor(rs, secs(func(f *floorResult) time.Duration { return f.single }))
	out := []figure{one}
	for _, step := range []struct {
		name string
		get  func(podSteps) time.Duration
	}{{"RunPodSandbox", func(s podSteps) time.Duration { return s.sandbox }},
		{"CreateContainer", func(s podSteps) time.Duration { return s.create }},
		{"StartContainer", func(s podSteps) time.Duration { return s.start }}} {
		out = append(out, figure{name: "  floor's one pod: " + step.name, unit: fmtSec,
			floor: fromFloor(rs, secs(func(f *floorResult) time.Duration { return step.get(f.steps) }))})
	}
	for _, n := range p.bursts {
		for _, q := range []struct {
			name string
			get  func(latencies) time.Duration
		}{{"p50", func(l latencies) time.Duration { return l.pct(50) }}, {"p90", func(l latencies) time.Duration { return l.pct(90) }},
			{"p99", func(l latencies) time.Duration { return l.pct(99) }}, {"all Running (from the first create call)", func(l latencies) time.Duration { return l.all }}} {
			f := both(fmt.Sprintf("%d-pod burst: %s", n, q.name), fmtSec, secs(func(s *subjectResult) time.Duration { return q.get(s.bursts[n]) }))
			f.floor = fromFloor(rs, secs(func(fl *floorResult) time.Duration { return q.get(fl.bursts[n]) }))
			out = append(out, f)
		}
	}
	for _, q := range []struct {
		name string
		get  func(latencies) time.Duration
	}{{"p50", func(l latencies) time.Duration { return l.pct(50) }}, {"p99", func(l latencies) time.Duration { return l.pct(99) }},
		{"all Running (from the first create call)", func(l latencies) time.Duration { return l.all }}} {
		out = append(out, both(fmt.Sprintf("%d pods with a CSI volume each (test driver, attach required, claims bound beforehand): %s", p.csiPods, q.name),
			fmtSec, secs(func(s *subjectResult) time.Duration { return q.get(s.csi) })))
		if p.draPods > 0 {
			out = append(out, both(draFigureName(p, q.name), fmtSec, secs(func(s *subjectResult) time.Duration { return q.get(s.dra) })))
		}
	}
	if p.draPods > 0 {
		out = append(out, both(fmt.Sprintf("  the same: pods whose claims the kubelet failed to prepare at first (%s), then prepared when it retried", draPrepareFailed),
			fmtPods, func(s *subjectResult) (float64, bool) { return float64(s.dra.refused), s.dra.all > 0 }))
	}
	out = append(out, pullFigures(r)...)
	out = append(out,
		both("first restart: finishedAt → new startedAt (runtime clock)", fmtSec, secs(func(s *subjectResult) time.Duration { return s.restart.runtime })),
		both("first restart: the same from the API status (1 s resolution)", fmtSec, func(s *subjectResult) (float64, bool) { return s.restart.api.Seconds(), true }),
		both("first restart: death → Running again seen by a watch", fmtSec, secs(func(s *subjectResult) time.Duration { return s.restart.watch })))
	out = append(out, footprintFigures(r)...)
	return append(out, both(fmt.Sprintf("API requests a minute, %d pods with a ConfigMap and a Secret each (last round)", p.footprintPods), fmtPerMin,
		func(s *subjectResult) (float64, bool) { return s.api.perMin, s.api.measured }))
}

// draFigureName names the DRA rows; the goal reads the "all" one.
func draFigureName(p plan, q string) string {
	return fmt.Sprintf("%d pods with a DRA claim each (from a ResourceClaimTemplate, upstream's test driver, allocated by the scheduler): %s", p.draPods, q)
}

// pullFiguresName names the pull rows; the goal reads the "all" one.
func pullFiguresName(p plan, q string) string {
	return fmt.Sprintf("%d pods pulling an image of their own each (%d MiB, local registry; nodelet and the closest upstream pull in parallel): %s",
		p.pullPods, pullLayerMiB, q)
}

// pullFigures are the pull burst's rows: nodelet (parallel pulls) against the upstream kubelet
// with its default serial pulls, and in extra rows with serializeImagePulls=false.
func pullFigures(r *results) []figure {
	if r.plan.pullPods == 0 {
		return nil
	}
	var out []figure
	for _, q := range []struct {
		name string
		get  func(latencies) time.Duration
	}{{"p50", func(l latencies) time.Duration { return l.pct(50) }}, {"p99", func(l latencies) time.Duration { return l.pct(99) }},
		{"all Running (from the first create call)", func(l latencies) time.Duration { return l.all }}} {
		get := secs(func(s *subjectResult) time.Duration { return q.get(s.pulls) })
		f := figure{name: pullFiguresName(r.plan, q.name), unit: fmtSec,
			floor:   fromFloor(r.rounds, secs(func(fl *floorResult) time.Duration { return q.get(fl.pulls) })),
			nodelet: fromSubjects(r.rounds, nodeletOf, get), upstream: fromSubjects(r.rounds, upstreamOf, get)}
		out = append(out, f)
		if r.closest != nil {
			parallel := figure{name: "  the same, " + q.name + ", upstream with serializeImagePulls=false", unit: fmtSec, nodelet: f.nodelet}
			if v, ok := get(r.closest); ok {
				parallel.upstream = sample{v}
			}
			out = append(out, parallel)
		}
	}
	refused := func(s *subjectResult) (float64, bool) { return float64(s.pulls.refused), s.pulls.all > 0 }
	return append(out, figure{name: fmt.Sprintf("  the same: pods whose pull the kubelet's own rate limit refused (%q, then a 10 s back-off)", pullRefusal),
		unit: fmtPods, nodelet: fromSubjects(r.rounds, nodeletOf, refused), upstream: fromSubjects(r.rounds, upstreamOf, refused)})
}

// footprintFigures are RSS and CPU at 0 pods and at plan.footprintPods, for the upstream
// kubelet with its defaults and, in extra rows, with the setting closest to nodelet.
func footprintFigures(r *results) []figure {
	p, rs := r.plan, r.rounds
	var out []figure
	for _, at := range []struct {
		name string
		get  func(*subjectResult) footprint
	}{{"0 pods", func(s *subjectResult) footprint { return s.idle }},
		{fmt.Sprintf("%d running pods", p.footprintPods), func(s *subjectResult) footprint { return s.loaded }}} {
		for _, m := range []struct {
			name string
			unit func(float64) string
			get  func(footprint) float64
		}{{fmt.Sprintf("RSS at %s (mean over %v)", at.name, p.footprintWindow), fmtMiB, func(f footprint) float64 { return f.rssMiB }},
			{fmt.Sprintf("  of which anonymous (RssAnon) at %s", at.name), fmtMiB, func(f footprint) float64 { return f.anonMiB }},
			{fmt.Sprintf("CPU at %s (%% of one core over %v)", at.name, p.footprintWindow), fmtPct, func(f footprint) float64 { return f.cpuPct }}} {
			get := func(s *subjectResult) (float64, bool) { fp := at.get(s); return m.get(fp), fp.samples > 0 }
			out = append(out, figure{name: m.name, unit: m.unit, nodelet: fromSubjects(rs, nodeletOf, get), upstream: fromSubjects(rs, upstreamOf, get)})
			if r.closest != nil {
				closest := figure{name: "  " + strings.TrimSpace(m.name) + ", upstream with PodAndContainerStatsFromCRI", unit: m.unit,
					nodelet: out[len(out)-1].nodelet}
				if v, ok := get(r.closest); ok {
					closest.upstream = sample{v}
				}
				out = append(out, closest)
			}
			if r.untimed != nil {
				untimed := figure{name: "  " + strings.TrimSpace(m.name) + ", nodelet with --pod-timeline=false", unit: m.unit}
				if v, ok := get(r.untimed); ok {
					untimed.nodelet = sample{v}
				}
				out = append(out, untimed)
			}
		}
	}
	return out
}

func renderDensity(w writer, r *results) {
	pods := r.plan.densityPods
	n, u := r.last().nodelet, r.last().upstream
	if pods == 0 || n == nil {
		return
	}
	nd, ud := n.density, pickDensity(u)
	all := func(d *densityResult) sample {
		if d == nil || d.running < d.pods {
			return nil
		}
		return sample{d.all.Seconds()}
	}
	w("| density (last round): %d pods, creation → all Running | – | %s | %s | %s | – |", pods, densityAll(nd), densityAll(ud), ratioCell(all(nd), all(ud)))
	w("| density (last round): node Ready throughout | – | %s | %s | – | – |", densityReady(nd), densityReady(ud))
	p99 := func(d *densityResult) sample {
		if d == nil || d.plegP99 < 0 || d.plegOver {
			return nil
		}
		return sample{d.plegP99}
	}
	w("| density (last round): relist p99, kubelet_pleg_relist_duration_seconds — nodelet times its two CRI lists only, "+
		"the upstream kubelet its lists plus each changed pod's status reads | – | %s | %s | %s | – |",
		densityPLEG(nd), densityPLEG(ud), ratioCell(p99(nd), p99(ud)))
	if f := r.last().floor; f != nil {
		for _, size := range r.plan.bursts {
			var parts []string
			for _, par := range r.plan.floorParallels {
				parts = append(parts, fmt.Sprintf("%d: %s", par, fmtSec(f.search[size][par].Seconds())))
			}
			w("| floor's parallelism search (last round), %d-pod burst: all started, by pods started at once | %s (best %d) | – | – | – | – |",
				size, strings.Join(parts, ", "), f.best[size])
		}
		if len(f.pullSearch) > 0 {
			pars := slices.Sorted(maps.Keys(f.pullSearch))
			parts := make([]string, len(pars))
			for i, par := range pars {
				parts[i] = fmt.Sprintf("%d: %s", par, fmtSec(f.pullSearch[par].Seconds()))
			}
			w("| floor's parallelism search (last round), %d pods pulling: all started, by pods started at once | %s (best %d) | – | – | – | – |",
				r.plan.pullPods, strings.Join(parts, ", "), f.pullBest)
		}
	}
}

// renderBreakdown shows, for each kubelet, each part of a pod's start for the median pod and for
// the slowest 5 % of pods, pooled over every round's breakdown burst.
func renderBreakdown(w writer, r *results) {
	pool := func(which func(round) *subjectResult) []podTimeline {
		var all []podTimeline
		for _, rd := range r.rounds {
			if s := which(rd); s != nil {
				all = append(all, s.breakdown...)
			}
		}
		return all
	}
	nAll, uAll := pool(nodeletOf), pool(upstreamOf)
	nMed, nTail := timelineSummary(nAll)
	uMed, uTail := timelineSummary(uAll)
	w("Every pod of the %d-pod bursts (%d for nodelet, %d for the upstream kubelet, pooled over the rounds), its", r.plan.breakdownBurst, len(nAll), len(uAll))
	w("start cut at the runtime's own stamps. Median: each part's median over all pods. Slowest 5 %%: each part's")
	w("mean over the pods with the longest totals, which is where the tail goes.\n")
	w("| part | nodelet median | nodelet slowest 5 %% | upstream median | upstream slowest 5 %% |")
	w("|---|---|---|---|---|")
	at := func(ds []time.Duration, i int) string {
		if i >= len(ds) {
			return "–"
		}
		return fmtSec(ds[i].Seconds())
	}
	for i, seg := range segments {
		w("| %s | %s | %s | %s | %s |", seg.name, at(nMed, i), at(nTail, i), at(uMed, i), at(uTail, i))
	}
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

func pickDensity(s *subjectResult) *densityResult {
	if s == nil {
		return nil
	}
	return s.density
}
