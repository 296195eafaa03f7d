package kuberuntime

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestPostStartExecRunsAfterStartAndFailureKills(t *testing.T) {
	e := newTestEnv(t)
	fail := false
	e.fake.SetExecHandler(func(id string, cmd []string) ([]byte, int32, error) {
		if fail {
			return []byte("hook broke"), 3, nil
		}
		return nil, 0, nil
	})
	c := ctr("app", "sleep", "60")
	c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/ready"}}}}
	pod := newPod("hooked", c)
	if res := e.sync(pod); res.Err != nil || len(res.Waiting) != 0 {
		t.Fatalf("hook that succeeds: %+v", res)
	}
	execs := e.fake.Execs()
	if len(execs) != 1 || execs[0].ContainerID != e.running("app").ID || strings.Join(execs[0].Cmd, " ") != "touch /ready" {
		t.Fatalf("execs %+v, want the hook run once in the started container", execs)
	}

	fail = true
	e.exit("app", 1)
	res := e.sync(pod) // restarted at once (first crash), hook fails this time
	if w := res.Waiting["app"]; w.Reason != ReasonPostStartHookError || !strings.Contains(w.Message, "hook broke") {
		t.Fatalf("waiting %+v, want %s with the hook's output", w, ReasonPostStartHookError)
	}
	for _, ctr := range e.containersNamed("app") {
		if ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("container %s still runs after its postStart hook failed", ctr.ID)
		}
	}
	if !hasEvent(e.events(), "Warning FailedPostStartHook") {
		t.Error("no FailedPostStartHook event")
	}
}

func TestPostStartHTTPSIsNotVerified(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/echo" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
	g := &v1.HTTPGetAction{Path: "echo", Port: intstr.Parse(port), Host: host, Scheme: v1.URISchemeHTTPS}
	if err := handlerHTTP(t.Context(), nil, &v1.Container{}, g); err != nil {
		t.Fatalf("https hook to a self-signed server: %v", err)
	}
	g.Path = "/missing"
	if err := handlerHTTP(t.Context(), nil, &v1.Container{}, g); err == nil {
		t.Fatal("404 from the hook counted as success")
	}
}

// A failing exec hook that prints 8 MiB reports at most 10 KiB of it, as probes do.
func TestPostStartExecOutputIsCapped(t *testing.T) {
	e := newTestEnv(t)
	e.fake.SetExecHandler(func(id string, cmd []string) ([]byte, int32, error) {
		return []byte(strings.Repeat("z", 8<<20)), 1, nil
	})
	c := ctr("app", "sleep", "60")
	c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"noisy"}}}}
	res := e.sync(newPod("noisy", c))
	w := res.Waiting["app"]
	if w.Reason != ReasonPostStartHookError || strings.Count(w.Message, "z") != 10<<10 {
		t.Fatalf("waiting %s with %d bytes of the hook's output, want %s with 10 KiB", w.Reason, strings.Count(w.Message, "z"), ReasonPostStartHookError)
	}
}
