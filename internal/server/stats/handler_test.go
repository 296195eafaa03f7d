package stats

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func getSummary(t *testing.T, h http.Handler, query string) (*http.Response, *statsapi.Summary) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stats/summary"+query, nil))
	resp := rec.Result()
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	var s statsapi.Summary
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("decoding the summary: %v", err)
	}
	return resp, &s
}

func TestHandlerServesFullSummaryAsJSON(t *testing.T) {
	e := newSummaryEnv(t)
	resp, s := getSummary(t, e.p.Handler(), "")
	if s == nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if s.Node.NodeName != "node-1" || s.Node.Fs == nil || len(s.Pods) != 2 || findPod(t, s, "web").EphemeralStorage == nil {
		t.Errorf("summary %+v lacks full figures", s)
	}
}

func TestHandlerOnlyCPUAndMemory(t *testing.T) {
	e := newSummaryEnv(t)
	for query, full := range map[string]bool{
		"?only_cpu_and_memory=true":                          false,
		"?only_cpu_and_memory=false":                         true,
		"?only_cpu_and_memory=1":                             true, // upstream accepts exactly "true"
		"?only_cpu_and_memory=true&only_cpu_and_memory=true": true,
	} {
		_, s := getSummary(t, e.p.Handler(), query)
		if s == nil {
			t.Fatalf("%s: no summary", query)
		}
		if got := s.Node.Fs != nil; got != full || s.Node.CPU == nil || s.Node.Memory == nil {
			t.Errorf("%s: full figures %v, want %v", query, got, full)
		}
		if web := findPod(t, s, "web"); (web.EphemeralStorage != nil) != full || web.Containers[0].CPU == nil {
			t.Errorf("%s: pod figures %+v", query, web)
		}
	}
}

func TestHandlerAcceptsPostedForm(t *testing.T) {
	e := newSummaryEnv(t)
	req := httptest.NewRequest(http.MethodPost, "/stats/summary", strings.NewReader("only_cpu_and_memory=true"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	e.p.Handler().ServeHTTP(rec, req)
	var s statsapi.Summary
	if err := json.NewDecoder(rec.Body).Decode(&s); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("POST: %d %v", rec.Code, err)
	}
	if s.Node.CPU == nil || s.Node.Fs != nil {
		t.Errorf("posted only_cpu_and_memory=true not honoured: %+v", s.Node)
	}
}

func TestHandlerErrors(t *testing.T) {
	e := newSummaryEnv(t)
	rec := httptest.NewRecorder()
	e.p.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/stats/summary", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d", rec.Code)
	}
	e.rt.listErr = errors.New("runtime down")
	if resp, _ := getSummary(t, e.p.Handler(), ""); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("failing runtime: %d", resp.StatusCode)
	}
}
