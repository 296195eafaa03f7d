package main

import (
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
	if err := yaml.UnmarshalStrict(kubeletConfig(o), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != "KubeletConfiguration" || cfg.ContainerRuntimeEndpoint != o.endpoint || cfg.CgroupDriver != "cgroupfs" ||
		cfg.FailSwapOn == nil || *cfg.FailSwapOn || cfg.MaxPods != 260 || cfg.Port != apiPort || cfg.ReadOnlyPort != 0 ||
		*cfg.HealthzPort != healthzPort || cfg.Authentication.X509.ClientCAFile != "/pki/ca.crt" ||
		!*cfg.Authentication.Webhook.Enabled || cfg.Authorization.Mode != "Webhook" || cfg.StaticPodPath != "" {
		t.Fatalf("unexpected config %+v", cfg)
	}
}

func TestGoalsNeedTheirInputs(t *testing.T) {
	r := &results{
		plan:    newPlan(true),
		floor:   &floorResult{bursts: map[int]latencies{}},
		nodelet: &subjectResult{single: 200 * time.Millisecond, bursts: map[int]latencies{}},
	}
	gs := goals(r)
	if !gs[0].met || gs[0].measured == "–" {
		t.Fatalf("one-pod goal: %+v", gs[0])
	}
	for _, g := range gs[1:4] {
		if g.measured != "–" {
			t.Fatalf("burst goal measured without a 100-pod burst: %+v", g)
		}
	}
}

// A test binary carries no VCS stamp: the bench refuses to measure such a binary.
func TestCheckStampRefusesUnstampedBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkStamp(exe, true); err == nil || !strings.Contains(err.Error(), "no VCS stamp") {
		t.Fatalf("got %v, want a refusal naming the missing stamp", err)
	}
}
