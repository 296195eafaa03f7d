package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

func TestParseHistogramAndQuantile(t *testing.T) {
	text := `# HELP kubelet_pleg_relist_duration_seconds x
# TYPE kubelet_pleg_relist_duration_seconds histogram
kubelet_pleg_relist_duration_seconds_bucket{le="0.005"} 0
kubelet_pleg_relist_duration_seconds_bucket{le="0.01"} 50
kubelet_pleg_relist_duration_seconds_bucket{le="0.1"} 100
kubelet_pleg_relist_duration_seconds_bucket{le="+Inf"} 100
kubelet_pleg_relist_duration_seconds_sum 3
kubelet_pleg_relist_duration_seconds_count 100
kubelet_pleg_relist_interval_seconds_bucket{le="1"} 7
`
	h, err := parseHistogram(strings.NewReader(text), plegMetric)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 4 || h[math.Inf(1)] != 100 {
		t.Fatalf("parsed %v", h)
	}
	// rank 99 lies in (0.01, 0.1] holding 50 observations: 0.01 + 0.09*49/50.
	if got, want := first(quantile(0.99, h)), 0.01+0.09*49/50; math.Abs(got-want) > 1e-9 {
		t.Fatalf("p99 = %v, want %v", got, want)
	}
	before := histogram{0.005: 0, 0.01: 50, 0.1: 50, math.Inf(1): 50}
	// After subtracting, all 50 new observations are in (0.01, 0.1].
	if got := first(quantile(0.5, h.minus(before))); math.Abs(got-(0.01+0.09*0.5)) > 1e-9 {
		t.Fatalf("p50 of the difference = %v", got)
	}
	if _, err := parseHistogram(strings.NewReader("other_metric 1\n"), plegMetric); err == nil {
		t.Fatal("a missing metric must be an error (reported as n/a)")
	}
}

func TestQuantileBeyondLastBound(t *testing.T) {
	h := histogram{1: 0, 10: 0, math.Inf(1): 5}
	if got, over := quantile(0.99, h); got != 10 || !over {
		t.Fatalf("quantile in the +Inf bucket = %v, %v; want the last finite bound 10, over", got, over)
	}
	if got := plegText(&densityResult{plegP99: 10, plegOver: true}); got != "> 10 s" {
		t.Fatalf("shown as %q", got)
	}
}

func first(v float64, _ bool) float64 { return v }

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := newLatencies(ds, time.Second)
	for p, want := range map[int]time.Duration{50: 50 * time.Millisecond, 90: 90 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond} {
		if got := l.pct(p); got != want {
			t.Errorf("p%d = %v, want %v", p, got, want)
		}
	}
	if got := newLatencies([]time.Duration{3, 1, 2}, 0).pct(50); got != 2 {
		t.Errorf("median of 3 = %v, want 2", got)
	}
}

func TestCPUTicksOfSelf(t *testing.T) {
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) { // burn a little CPU
	}
	if ticks, err := cpuTicks(os.Getpid()); err != nil || ticks == 0 {
		t.Fatalf("cpuTicks(self) = %d, %v", ticks, err)
	}
}

func TestKubeletConfigIsEquivalent(t *testing.T) {
	var cfg kubeletv1beta1.KubeletConfiguration
	o := options{endpoint: "unix:///run/x.sock", pki: "/pki"}
	if err := yaml.UnmarshalStrict(kubeletConfig(o, false, false), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != "KubeletConfiguration" || cfg.ContainerRuntimeEndpoint != o.endpoint || cfg.CgroupDriver != "cgroupfs" ||
		cfg.FailSwapOn == nil || *cfg.FailSwapOn || cfg.MaxPods != 260 || cfg.Port != apiPort || cfg.ReadOnlyPort != 0 ||
		*cfg.HealthzPort != healthzPort || cfg.Authentication.X509.ClientCAFile != "/pki/ca.crt" ||
		!*cfg.Authentication.Webhook.Enabled || cfg.Authorization.Mode != "Webhook" || cfg.StaticPodPath != "" {
		t.Fatalf("unexpected config %+v", cfg)
	}
	if len(cfg.FeatureGates) != 0 {
		t.Fatalf("defaults config sets feature gates %v", cfg.FeatureGates)
	}
	var cri kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict(kubeletConfig(o, true, true), &cri); err != nil {
		t.Fatal(err)
	}
	if !cri.FeatureGates["PodAndContainerStatsFromCRI"] || !cri.FeatureGates[draGate] || len(cri.FeatureGates) != 2 || cri.MaxPods != cfg.MaxPods {
		t.Fatalf("CRI-stats config with DRA: gates %v, maxPods %d", cri.FeatureGates, cri.MaxPods)
	}
}

func TestGoalsNeedTheirInputs(t *testing.T) {
	r := &results{
		plan: newPlan(true, ""),
		rounds: []round{{
			floor:   &floorResult{single: 150 * time.Millisecond, bursts: map[int]latencies{}},
			nodelet: &subjectResult{single: 200 * time.Millisecond, bursts: map[int]latencies{}},
		}},
	}
	gs := goals(r)
	if !gs[0].met || gs[0].measured == "–" {
		t.Fatalf("one-pod goal: %+v", gs[0])
	}
	if gs[1].met || !strings.HasPrefix(gs[1].measured, "1.33×") {
		t.Fatalf("one pod vs the floor: %+v, want 1.33× and not met", gs[1])
	}
	for _, g := range gs[2:5] {
		if g.measured != "–" {
			t.Fatalf("burst goal measured without a 100-pod burst: %+v", g)
		}
	}
}

func TestSampleMedianAndSpread(t *testing.T) {
	s := sample{3, 1, 2}
	if got := s.cell(fmtSec); got != "2.00 s (1.00 s–3.00 s)" {
		t.Fatalf("cell %q", got)
	}
	if got := (sample{4, 1, 2, 3}).median(); got != 2.5 {
		t.Fatalf("even median %v", got)
	}
	if got := (sample{}).cell(fmtSec); got != "–" {
		t.Fatalf("empty cell %q", got)
	}
	if got := (sample{0.5}).cell(fmtSec); got != "0.500 s (1 run)" {
		t.Fatalf("single cell %q", got)
	}
}

func TestRotateGivesEachSubjectEveryPlace(t *testing.T) {
	kinds := []string{"floor", "nodelet", "kubelet"}
	first := map[string]bool{}
	for r := 0; r < 3; r++ {
		order := rotate(kinds, r)
		if len(order) != 3 {
			t.Fatalf("round %d: %v", r, order)
		}
		first[order[0]] = true
	}
	if len(first) != 3 {
		t.Fatalf("not every subject ran first: %v", first)
	}
}

// The tail column averages the slowest 5 % by total, so a single slow pod's parts show there.
func TestTimelineSummaryFindsTheTail(t *testing.T) {
	var all []podTimeline
	for i := 0; i < 19; i++ {
		all = append(all, podTimeline{total: time.Second, queue: 100 * time.Millisecond, status: 900 * time.Millisecond})
	}
	all = append(all, podTimeline{total: 5 * time.Second, queue: 4 * time.Second, status: time.Second})
	med, tail := timelineSummary(all)
	if med[0] != 100*time.Millisecond || tail[0] != 4*time.Second || tail[len(tail)-1] != 5*time.Second {
		t.Fatalf("median %v tail %v", med, tail)
	}
}

// The meter finds CPU this process burns under "the bench", and the machine's busy time
// covers it.
func TestCPUMeterCountsWhatAProcessBurns(t *testing.T) {
	m := startCPUMeter()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	u := m.done()
	if got := u.byGroup["bench"]; got < 0.1 {
		t.Errorf("bench group = %.2f s of CPU after burning 0.3 s", got)
	}
	// Both counts are kept in clock ticks (10 ms) by different kernel accounts: allow a few
	// ticks of disagreement.
	const tickSlack = 0.05
	if u.busy+tickSlack < u.byGroup["bench"] || u.wall < 300*time.Millisecond {
		t.Errorf("busy %.2f s, wall %v: not covering the bench's %.2f s", u.busy, u.wall, u.byGroup["bench"])
	}
}

// A full-shaped result renders every section without a panic and names the flagged run.
func TestRenderFullResults(t *testing.T) {
	p := newPlan(false, "")
	sub := func(scale time.Duration) *subjectResult {
		return &subjectResult{single: scale, bursts: map[int]latencies{100: newLatencies([]time.Duration{scale, 2 * scale}, 3*scale)},
			pulls:     newLatencies([]time.Duration{2 * scale}, 6*scale),
			dra:       newLatencies([]time.Duration{scale}, 4*scale),
			breakdown: []podTimeline{{total: scale, queue: scale / 2, status: scale / 2}},
			idle:      footprint{samples: 60, rssMiB: 30, cpuPct: 0.1}, loaded: footprint{samples: 60, rssMiB: 50, cpuPct: 1}}
	}
	floor := &floorResult{single: 100 * time.Millisecond, bursts: map[int]latencies{100: newLatencies([]time.Duration{time.Second}, 2*time.Second)},
		best: map[int]int{100: 8}, search: map[int]map[int]time.Duration{100: {1: 9 * time.Second, 8: 2 * time.Second}},
		pulls: newLatencies([]time.Duration{time.Second}, 3*time.Second), pullBest: 20, pullSearch: map[int]time.Duration{4: 5 * time.Second, 20: 3 * time.Second}}
	withCPU := func(l latencies, kubelet float64) latencies {
		l.cpu = &cpuUse{wall: l.all, busy: 3, byGroup: map[string]float64{"kubelet": kubelet, "containerd": 1}}
		return l
	}
	floor.bursts[100] = withCPU(floor.bursts[100], 0)
	untimed := sub(time.Second)
	untimed.loaded.rssMiB = 48 // the timeline costs 2 MiB of 50: within 5 %
	r := &results{plan: p, date: time.Now(), closest: sub(time.Second), untimed: untimed}
	for i := 0; i < 3; i++ {
		rd := round{floor: floor, nodelet: sub(time.Second), upstream: sub(2 * time.Second),
			conds: []condition{{round: i, subject: "nodelet", idlePct: 95, minIdle: 85}, {round: i, subject: "floor", idlePct: 50, minIdle: 85}}}
		r.rounds = append(r.rounds, rd)
	}
	for i, rd := range r.rounds {
		rd.nodelet.bursts[100] = withCPU(rd.nodelet.bursts[100], float64(i)/10)
		rd.upstream.dra.refused = i // the pods it failed to prepare at first, round by round
	}
	r.rounds[2].nodelet.density = &densityResult{pods: 250, running: 250, all: time.Minute, ready: true, plegP99: 0.1}
	md := render(r)
	for _, want := range []string{"| 100-pod burst: p99 | 1.00 s (1.00 s–1.00 s) | 2.00 s (2.00 s–2.00 s) | 4.00 s (4.00 s–4.00 s) | 0.50× | 2.00× |",
		"upstream with PodAndContainerStatsFromCRI", "**3 subject runs were flagged**", "best 8", "Where a 100-pod burst's time goes",
		"nodelet with --pod-timeline=false | – | 48.0 MiB",
		"local registry; nodelet and the closest upstream pull in parallel): all Running (from the first create call) | 3.00 s (3.00 s–3.00 s) | 6.00 s (6.00 s–6.00 s) | 12.00 s (12.00 s–12.00 s) | 0.50× | 2.00× |",
		"20 pods pulling: all started, by pods started at once | 4: 5.00 s, 20: 3.00 s (best 20)",
		"| 20 pods with an image of their own each pulled, all Running | ≤ 0.5× upstream (its default, serial pulls) | 0.50× = 6.00 s vs 12.00 s; the runtime's own floor: 0.25× | ✓ |",
		"| of which the kubelet | 0.000 s (0.000 s–0.000 s) | 0.100 s (0.000 s–0.200 s) | – |",
		"| of which the rest (the pods' own processes, short-lived processes no group reaped, the kernel) | 2.00 s (2.00 s–2.00 s) | 1.90 s (1.80 s–2.00 s) | – |",
		"| 20 pods pulling | raw CRI floor | nodelet | upstream kubelet |",
		fmt.Sprintf("nodelet took 1.00 s longer than the floor; the machine was busy 0.000 s more, 0.000 s over %d CPUs. Of that, the kubelet and the control plane (API server, etcd, scheduler, controller-manager) added 0.100 s, the runtime's side (containerd, shims, the rest) -0.100 s.", cpuCount()),
		"| RSS at 110 running pods with the pod timeline | ≤ 1.05× without it | 1.04× = 50.0 MiB vs 48.0 MiB | ✓ |",
		"| 20 pods with a DRA claim each (from a ResourceClaimTemplate, upstream's test driver, allocated by the scheduler): all Running (from the first create call) | – | 4.00 s (4.00 s–4.00 s) | 8.00 s (8.00 s–8.00 s) | 0.50× | – |",
		"| 20 pods with a DRA claim each, all Running | ≤ upstream | 0.50× = 4.00 s vs 8.00 s | ✓ |",
		"- DRA: 20 pods at once, each with a claim from one ResourceClaimTemplate",
		"failed to prepare at first (FailedPrepareDynamicResources), then prepared when it retried | – | 0 pods (0 pods–0 pods) | 1 pods (0 pods–2 pods) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Log(md)
	}
}

// The RSS goal says how much of the RSS the process allocated (anonymous).
func TestRSSGoalShowsTheAnonymousPart(t *testing.T) {
	r := &results{plan: newPlan(false, ""), rounds: []round{{
		floor: &floorResult{bursts: map[int]latencies{}},
		nodelet: &subjectResult{bursts: map[int]latencies{},
			loaded: footprint{rssMiB: 64, anonMiB: 31.8, samples: 60}},
	}}}
	if r.plan.footprintPods != 110 {
		t.Fatalf("the full plan measures at %d pods, not 110", r.plan.footprintPods)
	}
	for _, g := range goals(r) {
		if g.name == "RSS at 110 running pods" {
			if g.met || !strings.Contains(g.measured, "64.0 MiB (anonymous 31.8 MiB;") {
				t.Fatalf("RSS goal: %+v", g)
			}
			return
		}
	}
	t.Fatal("no RSS goal")
}

// The pull goal compares with the upstream rounds whose pulls its rate limit did not refuse,
// says how many it left out, and is not judged when every round was refused.
func TestPullGoalLeavesOutRefusedUpstreamRounds(t *testing.T) {
	pulls := func(all time.Duration, refused int) latencies {
		l := newLatencies([]time.Duration{all}, all)
		l.refused = refused
		return l
	}
	resultsWith := func(upstreamRefused ...int) *results {
		r := &results{plan: newPlan(false, "")}
		for _, refused := range upstreamRefused {
			upstreamAll := 4 * time.Second
			if refused > 0 {
				upstreamAll = 14 * time.Second
			}
			r.rounds = append(r.rounds, round{floor: &floorResult{bursts: map[int]latencies{}},
				nodelet:  &subjectResult{bursts: map[int]latencies{}, pulls: pulls(2*time.Second, 0)},
				upstream: &subjectResult{bursts: map[int]latencies{}, pulls: pulls(upstreamAll, refused)}})
		}
		return r
	}
	pullGoalOf := func(r *results) goal {
		for _, g := range goals(r) {
			if strings.Contains(g.name, "pulled, all Running") {
				return g
			}
		}
		t.Fatal("no pull goal")
		return goal{}
	}
	g := pullGoalOf(resultsWith(3, 0, 3))
	if !g.met || !strings.HasPrefix(g.measured, "0.50× = 2.00 s vs 4.00 s") || !strings.Contains(g.measured, "left out: the 2 of 3 upstream rounds") {
		t.Errorf("one unrefused round of 3: %+v; want 0.50× against it, met, and the 2 left out said", g)
	}
	md := render(resultsWith(3, 2, 3))
	goalLine := grepMD(md, "pulled, all Running")
	if !strings.Contains(goalLine, "| – (no upstream round to compare with); left out: the 3 of 3") || !strings.HasSuffix(goalLine, "| – |") {
		t.Errorf("every round refused: want the goal unjudged (–) with the 3 rounds left out said, got\n%s", goalLine)
	}
	if row := grepMD(md, "rate limit refused"); !strings.Contains(row, "| 0 pods (0 pods–0 pods) | 3 pods (2 pods–3 pods) |") {
		t.Errorf("the refused pods' row: got\n%s", row)
	}
}

func grepMD(md, what string) string {
	var out []string
	for _, line := range strings.Split(md, "\n") {
		if strings.Contains(line, what) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// The method says that both kubelets wait for volumesInUse before mounting an attached volume.
func TestMethodSaysBothKubeletsWaitForVolumesInUse(t *testing.T) {
	var sb strings.Builder
	renderMethod(func(format string, args ...any) { fmt.Fprintf(&sb, format+"\n", args...) }, &results{plan: newPlan(false, "")})
	if text := sb.String(); !strings.Contains(text, "Both\n  kubelets stage and publish such a volume only once a node status update has listed it in the Node's\n  volumesInUse") {
		t.Errorf("method lacks the volumesInUse note:\n%s", text)
	}
}
