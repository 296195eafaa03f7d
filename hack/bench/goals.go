package main

import (
	"fmt"
	"time"
)

// goal is one target of issue 5 and how nodelet did against it.
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
		if g.measured != "–" {
			mark = map[bool]string{true: "✓", false: "✗"}[g.met]
		}
		w("| %s | %s | %s | %s |", g.name, g.target, g.measured, mark)
	}
}

func goals(r *results) []goal {
	n, u, f := r.nodelet, r.upstream, r.floor
	gs := []goal{{name: "one pod on an idle node", target: "≤ 0.3 s",
		measured: fmtSec(n.single.Seconds()), met: n.single <= 300*time.Millisecond}}
	gs = append(gs, burstGoals(n, u, f)...)
	gs = append(gs, goal{name: "first restart after death (finishedAt → startedAt)", target: "≤ 0.2 s",
		measured: fmtSec(n.restart.runtime.Seconds()), met: n.restart.runtime <= 200*time.Millisecond})
	rss := goal{name: "RSS at 110 running pods", target: "≤ 40 MiB", measured: "–"}
	cpu := goal{name: "CPU at 110 idle pods", target: "≤ 0.5× upstream", measured: "–"}
	if r.plan.footprintPods == 110 {
		rss.measured, rss.met = fmtMiB(n.loaded.rssMiB), n.loaded.rssMiB <= 40
		if u != nil && u.loaded.cpuPct > 0 {
			cpu.measured = fmt.Sprintf("%s = %s of %s", ratio(n.loaded.cpuPct, u.loaded.cpuPct), fmtPct(n.loaded.cpuPct), fmtPct(u.loaded.cpuPct))
			cpu.met = n.loaded.cpuPct <= 0.5*u.loaded.cpuPct
		}
	}
	dens := goal{name: "250 pods Running with the node Ready", target: "all Running, Ready throughout", measured: "–"}
	if d := n.density; d != nil {
		dens.measured = fmt.Sprintf("%d/%d Running, Ready throughout: %s", d.running, d.pods, densityReady(d))
		dens.met = d.running == d.pods && d.ready
	}
	return append(gs, rss, cpu, dens)
}

// burstGoals are the three 100-pod burst targets.
func burstGoals(n, u *subjectResult, f *floorResult) []goal {
	all := goal{name: "100-pod burst, all Running", target: "≤ 1.05× the floor", measured: "–"}
	p50 := goal{name: "100-pod burst, p50", target: "≤ 0.6× upstream", measured: "–"}
	p99 := goal{name: "100-pod burst, p99", target: "≤ upstream", measured: "–"}
	nb, ok := n.bursts[100]
	if !ok {
		return []goal{all, p50, p99}
	}
	if fb, ok := f.bursts[100]; ok {
		all.measured = fmt.Sprintf("%s = %s vs %s", ratio(nb.all.Seconds(), fb.all.Seconds()), fmtSec(nb.all.Seconds()), fmtSec(fb.all.Seconds()))
		all.met = nb.all.Seconds() <= 1.05*fb.all.Seconds()
	}
	if u != nil {
		ub := u.bursts[100]
		p50.measured = fmt.Sprintf("%s = %s vs %s", ratio(nb.pct(50).Seconds(), ub.pct(50).Seconds()), fmtSec(nb.pct(50).Seconds()), fmtSec(ub.pct(50).Seconds()))
		p50.met = nb.pct(50).Seconds() <= 0.6*ub.pct(50).Seconds()
		p99.measured = fmt.Sprintf("%s = %s vs %s", ratio(nb.pct(99).Seconds(), ub.pct(99).Seconds()), fmtSec(nb.pct(99).Seconds()), fmtSec(ub.pct(99).Seconds()))
		p99.met = nb.pct(99) <= ub.pct(99)
	}
	return []goal{all, p50, p99}
}

func renderMethod(w writer, r *results) {
	p := r.plan
	w("- Each subject runs alone on the project containerd; pods, sandboxes and the Node object are removed")
	w("  between measurements, and the Node registers afresh for each kubelet (both as `%s`, API on :%d).", nodeName, apiPort)
	w("- Pods: one container `%s` (`sleep`), `spec.nodeName` set, no service-account token volume,", image)
	w("  grace period 1 s, created 8 at a time. Latency = creation request → first watch event with phase Running.")
	w("- Floor: the same pods through CRI by this driver (RunPodSandbox, CreateContainer, StartContainer),")
	w("  %d at a time; latency = start of the run → StartContainer returned.", p.floorParallel)
	w("- First restart: a container exiting 1 after 3 s (restartPolicy Always), median of %d. The runtime row uses", p.restarts)
	w("  the runtime's nanosecond timestamps of the dead and the new container; the API row the same fields as")
	w("  the pod status reports them (whole seconds).")
	w("- Footprint: VmRSS sampled every second and utime+stime from /proc/<pid>/stat over %v, after %v of quiet.", p.footprintWindow, p.settle)
	if p.densityPods > 0 {
		w("- Density: %d pods at once (maxPods 260); a watch on the Node flags any non-Ready condition; PLEG relist", p.densityPods)
		w("  p99 is interpolated from the kubelet's own histogram, the difference between scrapes before and after.")
	}
	w("- Upstream kubelet: `--config` with containerRuntimeEndpoint = the project socket, cgroupDriver cgroupfs,")
	w("  failSwapOn false, maxPods 260, x509 + webhook authentication, Webhook authorization, readOnlyPort 0,")
	w("  image GC off (so it never deletes the shared test images); its sysctl changes are undone afterwards.")
}
