package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodelet/nodelet/internal/podspec/podutil"
)

// fakeServer serves whatever body and status the test sets and records the
// headers of each request.
type fakeServer struct {
	mu      sync.Mutex
	status  int
	body    string
	headers []http.Header
}

func (f *fakeServer) set(status int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.body = status, body
}

func (f *fakeServer) requests() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.headers...)
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.headers = append(f.headers, r.Header.Clone())
	w.WriteHeader(f.status)
	_, _ = w.Write([]byte(f.body))
}

func newURLTest(t *testing.T, status int, body string) (*fakeServer, *URLSource, chan []*v1.Pod, *record.FakeRecorder) {
	t.Helper()
	fake := &fakeServer{status: status, body: body}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	out := make(chan []*v1.Pod, 10)
	rec := record.NewFakeRecorder(100)
	header := http.Header{"X-Token": []string{"secret"}}
	return fake, NewURLSource(srv.URL+"/pods", header, testNode, time.Hour, out, rec), out, rec
}

const podList = `{"apiVersion":"v1","kind":"PodList","items":[
 {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x:1"}]}},
 {"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"x:1"}]}}]}`

func TestURLSourceSendsHeadersAndPod(t *testing.T) {
	fake, src, out, _ := newURLTest(t, http.StatusOK, manifest("web", "nginx:1"))
	ctx := context.Background()
	src.sync(ctx)
	pods := receive(t, out)
	if len(pods) != 1 || pods[0].Name != "web-node1" || pods[0].Annotations[podutil.AnnotationSource] != podutil.HTTPSource {
		t.Fatalf("snapshot = %+v", pods)
	}
	if got := fake.requests()[0].Get("X-Token"); got != "secret" {
		t.Errorf("X-Token header = %q", got)
	}
	src.sync(ctx)
	expectNoSnapshot(t, out) // unchanged content is not resent
	if len(fake.requests()) != 2 {
		t.Errorf("requests = %d, want 2", len(fake.requests()))
	}
}

func TestURLSourcePodList(t *testing.T) {
	_, src, out, _ := newURLTest(t, http.StatusOK, podList)
	src.sync(context.Background())
	if got := names(receive(t, out)); len(got) != 2 || got[0] != "a-node1" || got[1] != "b-node1" {
		t.Fatalf("names = %v", got)
	}
}

func TestURLSourceErrorKeepsLastSnapshot(t *testing.T) {
	fake, src, out, rec := newURLTest(t, http.StatusOK, podList)
	ctx := context.Background()
	src.sync(ctx)
	receive(t, out)

	fake.set(http.StatusInternalServerError, "boom")
	src.sync(ctx)
	expectNoSnapshot(t, out)

	fake.set(http.StatusOK, "kind: [")
	src.sync(ctx)
	src.sync(ctx)
	expectNoSnapshot(t, out)
	expectOneEvent(t, rec, "Warning FailedToDecode", "/pods")

	fake.set(http.StatusOK, manifest("web", "nginx:1"))
	src.sync(ctx)
	if got := names(receive(t, out)); len(got) != 1 || got[0] != "web-node1" {
		t.Fatalf("names after recovery = %v", got)
	}

	// Recovering to the very content that was last sent sends nothing new.
	fake.set(http.StatusBadGateway, "")
	src.sync(ctx)
	fake.set(http.StatusOK, manifest("web", "nginx:1"))
	src.sync(ctx)
	expectNoSnapshot(t, out)
}

func TestURLSourceFirstFailureSendsNothing(t *testing.T) {
	fake, src, out, _ := newURLTest(t, http.StatusNotFound, "")
	src.sync(context.Background())
	expectNoSnapshot(t, out)
	fake.set(http.StatusOK, "")
	src.sync(context.Background())
	if got := receive(t, out); len(got) != 0 {
		t.Fatalf("empty body gave %v", names(got))
	}
}

func TestURLSourceRun(t *testing.T) {
	fake := &fakeServer{status: http.StatusOK, body: manifest("web", "nginx:1")}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	out := make(chan []*v1.Pod)
	src := NewURLSource(srv.URL, nil, testNode, 10*time.Millisecond, out, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	receiveNames(t, out, "web-node1")
	fake.set(http.StatusOK, podList)
	receiveNames(t, out, "a-node1", "b-node1")
}

func TestURLNameKeepsSchemeHostAndPath(t *testing.T) {
	for raw, want := range map[string]string{
		"https://user:pass@example.com:8443/a/b.yaml?sig=abc&exp=1#frag": "https://example.com:8443/a/b.yaml",
		"http://token@10.0.0.1/pods":                                     "http://10.0.0.1/pods",
		"http://example.com/pods":                                        "http://example.com/pods",
		"http://example.com/a%2Fb?x=1":                                   "http://example.com/a%2Fb",
		"http://[::1]:80/%zz":                                            "<unparsable URL>",
	} {
		if got := URLName(raw); got != want {
			t.Errorf("URLName(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A URL's userinfo and query (a signed URL's signature) are in no event or error nodelet
// makes about the source: a bad manifest, a failed status, a failed connection.
func TestURLSourceShowsNoURLCredentials(t *testing.T) {
	fake := &fakeServer{status: http.StatusOK, body: "kind: ["}
	srv := httptest.NewServer(fake)
	host := strings.TrimPrefix(srv.URL, "http://")
	raw := "http://unit-user:unit-password@" + host + "/pods?X-Amz-Signature=unit-signature"
	rec := record.NewFakeRecorder(10)
	src := NewURLSource(raw, nil, testNode, time.Hour, make(chan []*v1.Pod, 10), rec)
	secretFree := func(what, text string) {
		t.Helper()
		for _, s := range []string{"unit-user", "unit-password", "unit-signature"} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q: %s", what, s, text)
			}
		}
	}
	ctx := context.Background()
	src.sync(ctx)
	ev := <-rec.Events
	if want := "Could not decode static pod manifest http://" + host + "/pods:"; !strings.Contains(ev, want) {
		t.Errorf("event %q does not name the URL as %q", ev, want)
	}
	secretFree("event", ev)
	fake.set(http.StatusForbidden, "")
	_, err := src.fetch(ctx)
	if err == nil {
		t.Fatal("403 fetched")
	}
	secretFree("status error", err.Error())
	srv.Close()
	_, err = src.fetch(ctx)
	if err == nil || !strings.Contains(err.Error(), "http://"+host+"/pods") {
		t.Fatalf("connection error %v does not name the URL", err)
	}
	secretFree("connection error", err.Error())
}
