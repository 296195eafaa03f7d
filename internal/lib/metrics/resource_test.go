package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

type fakeSummary struct {
	s   *statsapi.Summary
	err error
}

func (f fakeSummary) CPUAndMemorySummary(context.Context) (*statsapi.Summary, error) {
	return f.s, f.err
}

func u(v uint64) *uint64 { return &v }

var sampleAt = time.Unix(1700000000, 500_000_000)

func testSummary() *statsapi.Summary {
	ts := metav1.NewTime(sampleAt)
	cpu := func(ns uint64) *statsapi.CPUStats { return &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: u(ns)} }
	mem := func(b uint64) *statsapi.MemoryStats { return &statsapi.MemoryStats{Time: ts, WorkingSetBytes: u(b)} }
	return &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: "node-1", CPU: cpu(90e9), Memory: mem(1 << 30)},
		Pods: []statsapi.PodStats{{
			PodRef: statsapi.PodReference{Name: "web", Namespace: "default", UID: "uid-web"},
			CPU:    cpu(3e9), Memory: mem(12 << 20),
			Containers: []statsapi.ContainerStats{
				{Name: "app", StartTime: metav1.NewTime(time.Unix(1699999000, 0)), CPU: cpu(2e9), Memory: mem(10 << 20)},
				{Name: "side", StartTime: metav1.NewTime(time.Unix(1699999001, 0)), CPU: cpu(1e9), Memory: mem(2 << 20)},
			},
		}},
	}
}

func TestResourceMetrics(t *testing.T) {
	families := scrape(t, NewResourceHandler(fakeSummary{s: testSummary()}))
	check := func(name string, labels map[string]string, want float64, stamped bool) {
		t.Helper()
		m := findMetric(t, families, name, labels)
		got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		if got != want {
			t.Errorf("%s%v = %v, want %v", name, labels, got, want)
		}
		if stamped && m.GetTimestampMs() != sampleAt.UnixMilli() {
			t.Errorf("%s%v timestamp %d, want %d", name, labels, m.GetTimestampMs(), sampleAt.UnixMilli())
		}
	}
	app := map[string]string{"container": "app", "pod": "web", "namespace": "default"}
	check("node_cpu_usage_seconds_total", nil, 90, true)
	check("node_memory_working_set_bytes", nil, 1<<30, true)
	check("container_cpu_usage_seconds_total", app, 2, true)
	check("container_memory_working_set_bytes", app, 10<<20, true)
	check("container_start_time_seconds", app, 1699999000, false)
	check("pod_cpu_usage_seconds_total", map[string]string{"pod": "web", "namespace": "default"}, 3, true)
	check("pod_memory_working_set_bytes", map[string]string{"pod": "web", "namespace": "default"}, 12<<20, true)
	check("scrape_error", nil, 0, false)
	check("resource_scrape_error", nil, 0, false)
	if n := len(families["container_cpu_usage_seconds_total"].GetMetric()); n != 2 {
		t.Errorf("container cpu series %d, want 2", n)
	}
	if f := families["container_cpu_usage_seconds_total"]; f.GetType().String() != "COUNTER" || !strings.HasPrefix(f.GetHelp(), "[STABLE] ") {
		t.Errorf("container cpu family %v %q", f.GetType(), f.GetHelp())
	}
	for _, l := range families["container_cpu_usage_seconds_total"].GetMetric()[0].GetLabel() {
		if n := l.GetName(); n != "container" && n != "pod" && n != "namespace" {
			t.Errorf("unexpected label %s", n)
		}
	}
}

func TestResourceMetricsScrapeError(t *testing.T) {
	families := scrape(t, NewResourceHandler(fakeSummary{err: errors.New("runtime down")}))
	if v := findMetric(t, families, "scrape_error", nil).GetGauge().GetValue(); v != 1 {
		t.Errorf("scrape_error = %v", v)
	}
	if _, ok := families["container_cpu_usage_seconds_total"]; ok {
		t.Error("no container series expected after an error")
	}
}

func TestProbesEndpoint(t *testing.T) {
	h := ProbesHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/probes", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("empty probes endpoint: %d", rec.Code)
	}
	if families := scrape(t, h); len(families) != 0 {
		t.Fatalf("no probe run yet, got %v", families)
	}
	RecordProbe(ProbeReadiness, ProbeSuccessful, "app", "web", "default", "uid-web")
	RecordProbe(ProbeReadiness, ProbeSuccessful, "app", "web", "default", "uid-web")
	ObserveProbeDuration(ProbeReadiness, "app", "web", "default", 20*time.Millisecond)
	families := scrape(t, h)
	want := map[string]string{"probe_type": "Readiness", "result": "successful", "container": "app", "pod": "web", "namespace": "default", "pod_uid": "uid-web"}
	if v := findMetric(t, families, "prober_probe_total", want).GetCounter().GetValue(); v != 2 {
		t.Errorf("prober_probe_total = %v", v)
	}
	if _, ok := families["prober_probe_duration_seconds"]; !ok {
		t.Error("no prober_probe_duration_seconds")
	}
	ForgetProbes("web", "default")
	if families := scrape(t, h); len(families) != 0 {
		t.Errorf("series left after ForgetProbes: %v", families)
	}
}
