package timeline

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
}

func TestStepsAreKeptPerPodAndBounded(t *testing.T) {
	r := New()
	web := pod("web", "u1")
	r.Record(web, Step{Name: Admitted})
	r.Record(web, Step{Name: SandboxCreated, Call: "RunPodSandbox", Start: time.Now().Add(-time.Second)})
	got, ok := r.Get("ns", "web")
	if !ok || len(got.Steps) != 2 || got.Steps[1].Call != "RunPodSandbox" || got.Steps[1].End.Sub(got.Steps[1].Start) < time.Second {
		t.Fatalf("timeline %+v", got)
	}
	for i := range maxSteps + 10 {
		r.Record(web, Step{Name: ContainerStarted, Detail: fmt.Sprint(i)})
	}
	got, _ = r.Get("ns", "web")
	if len(got.Steps) != maxSteps || got.Dropped != 12 || got.Steps[0].Name != Admitted || got.Steps[maxSteps-1].Detail != fmt.Sprint(maxSteps+9) {
		t.Errorf("bounded timeline: %d steps, %d dropped, first %q, last %q", len(got.Steps), got.Dropped, got.Steps[0].Name, got.Steps[maxSteps-1].Detail)
	}

	// A replaced pod (same name, new UID) is the one shown; the finished one is forgotten
	// once enough newer pods finished.
	r.Finish("u1")
	r.Record(pod("web", "u2"), Step{Name: Admitted})
	if got, _ := r.Get("ns", "web"); got.UID != "u2" {
		t.Errorf("shown %s, want the running instance", got.UID)
	}
	for i := range keepFinished {
		uid := types.UID(fmt.Sprint("x", i))
		r.Record(pod(string(uid), uid), Step{Name: Admitted})
		r.Finish(uid)
	}
	r.mu.Lock()
	_, kept := r.pods["u1"]
	r.mu.Unlock()
	if kept {
		t.Error("the oldest finished timeline was kept past the limit")
	}
}

func TestHandlerServesJSON(t *testing.T) {
	r := New()
	r.Record(pod("web", "u1"), Step{Name: Admitted})
	mux := http.NewServeMux()
	mux.Handle("GET /debug/pods/{namespace}/{name}/timeline", r.Handler())
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pods/ns/web/timeline", nil))
	var got Timeline
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.Steps[0].Name != Admitted {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pods/ns/other/timeline", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("unknown pod: %d", rec.Code)
	}
}

func TestBegunStepShowsInProgressUntilItEnds(t *testing.T) {
	r := New()
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return clock }
	web := pod("web", "u1")
	end := r.Begin(web, Step{Name: ImagePulled, Container: "app", Detail: "x.local/app:1"})
	r.Record(web, Step{Name: "readiness probe failed", Container: "side"}) // later steps do not end it

	clock = clock.Add(12 * time.Second)
	got, _ := r.Get("ns", "web")
	pull := got.Steps[0]
	if !pull.InProgress || pull.End.Sub(pull.Start) != 12*time.Second {
		t.Fatalf("in-progress pull: %+v", pull)
	}

	clock = clock.Add(3 * time.Second)
	end("", fmt.Errorf("401 Unauthorized"))
	got, _ = r.Get("ns", "web")
	pull = got.Steps[0]
	if pull.InProgress || pull.End.Sub(pull.Start) != 15*time.Second || pull.Error != "401 Unauthorized" || pull.Detail != "x.local/app:1" {
		t.Errorf("ended pull: %+v", pull)
	}
	var decoded map[string]any
	body, _ := json.Marshal(got.Steps[0])
	if json.Unmarshal(body, &decoded); decoded["inProgress"] != nil {
		t.Errorf("an ended step is marshalled with inProgress: %s", body)
	}
}

// With --pod-timeline=false there is no recorder: recording is a no-op and the handler says why.
func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Record(pod("web", "u1"), Step{Name: Admitted})
	r.Begin(pod("web", "u1"), Step{Name: ImagePulled})("", nil)
	r.Finish("u1")
	if _, ok := r.Get("ns", "web"); ok {
		t.Error("a nil recorder returned a timeline")
	}
	rec := httptest.NewRecorder()
	mux := http.NewServeMux()
	mux.Handle("GET /debug/pods/{namespace}/{name}/timeline", r.Handler())
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pods/ns/web/timeline", nil))
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "--pod-timeline=false") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}
