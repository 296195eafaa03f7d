package handlerio

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestExecOutputKeepsTheFirstMaxOutputBytes(t *testing.T) {
	big := []byte(strings.Repeat("o", 16<<20))
	if got := ExecOutput(big, []byte("err")); len(got) != MaxOutput || got[0] != 'o' {
		t.Errorf("16 MiB of stdout: kept %d bytes, want %d", len(got), MaxOutput)
	}
	if got := ExecOutput([]byte("out\n"), big); len(got) != MaxOutput || !strings.HasPrefix(got, "out\no") {
		t.Errorf("stdout then 16 MiB of stderr: kept %d bytes starting %q", len(got), got[:8])
	}
	if got := ExecOutput([]byte("out "), []byte("err")); got != "out err" {
		t.Errorf("short output %q, want it whole", got)
	}
}

// target is a server that counts the requests it gets.
func target(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// redirector answers every GET with a 302 to location.
func redirector(t *testing.T, location string) (host string, port int) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, location, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	h, p, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	port, _ = strconv.Atoi(p)
	return h, port
}

func TestRedirectToAnotherHostIsNotFollowed(t *testing.T) {
	tgt, hits := target(t)
	// The pod is reached as "localhost", the redirect goes to 127.0.0.1: another host name,
	// as the node's loopback or a metadata address would be.
	_, port := redirector(t, tgt.URL+"/stolen")
	resp, err := NewClient().Get("http://localhost:" + strconv.Itoa(port) + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || hits.Load() != 0 {
		t.Errorf("status %d, target hit %d times: want the 302 itself and no request elsewhere", resp.StatusCode, hits.Load())
	}
}

func TestRedirectOnTheSameHostIsFollowedTenTimes(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/loop":
			n.Add(1)
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/start":
			http.Redirect(w, r, "/done", http.StatusFound)
		}
	}))
	defer srv.Close()
	resp, err := NewClient().Get(srv.URL + "/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/done" {
		t.Errorf("same-host redirect ended at %s with %d, want /done with 200", resp.Request.URL.Path, resp.StatusCode)
	}
	if _, err := NewClient().Get(srv.URL + "/loop"); err == nil || n.Load() != 10 {
		t.Errorf("redirect loop: err %v after %d requests, want an error after 10", err, n.Load())
	}
}

func TestHookGetStopsAtARedirectOffThePod(t *testing.T) {
	tgt, hits := target(t)
	_, port := redirector(t, tgt.URL+"/stolen")
	g := &v1.HTTPGetAction{Path: "/hook", HTTPHeaders: []v1.HTTPHeader{{Name: "X-Pod", Value: "1"}}}
	if err := HookGet(t.Context(), g, "localhost", port); err != nil {
		t.Fatalf("hook answered with a 302: %v, want it to pass as a 3xx", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the redirect's target got %d requests, want none", hits.Load())
	}
}

func TestHookGetSendsTheHandlersRequest(t *testing.T) {
	var got *http.Request
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		if r.URL.Path != "/echo" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host, p, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
	port, _ := strconv.Atoi(p)
	g := &v1.HTTPGetAction{Path: "echo?x=1", Port: intstr.FromInt(port), Scheme: v1.URISchemeHTTPS,
		HTTPHeaders: []v1.HTTPHeader{{Name: "Host", Value: "pod.example"}, {Name: "X-Pod", Value: "1"}}}
	if err := HookGet(t.Context(), g, host, port); err != nil {
		t.Fatalf("https hook to a self-signed server: %v", err)
	}
	if got.Host != "pod.example" || got.Header.Get("X-Pod") != "1" || got.URL.RawQuery != "x=1" ||
		got.UserAgent() != HookUserAgent || got.Header.Get("Accept") != "*/*" {
		t.Errorf("request host %q headers %v query %q", got.Host, got.Header, got.URL.RawQuery)
	}
	g.Path = "/missing"
	if err := HookGet(t.Context(), g, host, port); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("404 from the hook: %v, want a failure", err)
	}
}
