package healthz

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/lib/metrics"
)

func TestHandler(t *testing.T) {
	var loopErr error
	h := Handler(map[string]Check{
		"syncloop": func() error { return loopErr },
		"pleg":     func() error { return nil },
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Fatalf("healthy: got %d %q", rec.Code, rec.Body.String())
	}
	loopErr = errors.New("stalled for 2m")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "syncloop failed: stalled") {
		t.Fatalf("stalled: got %d %q", rec.Code, rec.Body.String())
	}
}

func TestHandlerRecordsSLIs(t *testing.T) {
	h := Handler(map[string]Check{"syncloop": func() error { return errors.New("stalled") }})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	rec := httptest.NewRecorder()
	metrics.SLIHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/slis", nil))
	if want := `kubernetes_healthcheck{name="syncloop",type="healthz"} 0`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("no %s in /metrics/slis:\n%s", want, rec.Body)
	}
}
