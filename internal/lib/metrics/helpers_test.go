package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrape GETs h as Prometheus would (text format) and parses the exposition.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	return families
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// findMetric returns the sample of family name whose labels include want.
func findMetric(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := families[name]
	if !ok {
		t.Fatalf("no %s in the exposition", name)
	}
	for _, m := range f.GetMetric() {
		got := labelsOf(m)
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if match {
			return m
		}
	}
	t.Fatalf("no %s sample with labels %v", name, want)
	return nil
}
