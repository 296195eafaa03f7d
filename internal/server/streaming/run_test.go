package streaming

import (
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func post(t *testing.T, e *env, path string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(http.MethodPost, e.api.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

func TestRunReturnsStdoutThenStderr(t *testing.T) {
	e := newEnv(t)
	e.rt.stdout, e.rt.stderr = []byte("out\n"), []byte("err\n")
	resp, body := post(t, e, "/run/default/web/main?cmd=ls+-l+/tmp", nil)
	if resp.StatusCode != http.StatusOK || body != "out\nerr\n" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	want := []any{execSyncCall{containerID: "main-2", cmd: []string{"ls", "-l", "/tmp"}}}
	if calls := e.rt.calls(); !reflect.DeepEqual(calls, want) {
		t.Errorf("runtime calls %+v, want %+v", calls, want)
	}

	// The command may come in a form body, and with the pod's UID in the path.
	resp, body = post(t, e, "/run/default/web/uid-web/main", url.Values{"cmd": {"cat /etc/hostname"}})
	if resp.StatusCode != http.StatusOK || body != "out\nerr\n" {
		t.Fatalf("form body: got %d %q", resp.StatusCode, body)
	}
	if calls := e.rt.calls(); len(calls) != 2 || !reflect.DeepEqual(calls[1].(execSyncCall).cmd, []string{"cat", "/etc/hostname"}) {
		t.Errorf("runtime calls %+v", calls)
	}
}

func TestRunFailures(t *testing.T) {
	e := newEnv(t)
	e.rt.stderr, e.rt.exitCode = []byte("no such file"), 2
	resp, body := post(t, e, "/run/default/web/main?cmd=cat+/nope", nil)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "command 'cat /nope' exited with 2: no such file") {
		t.Errorf("non-zero exit: got %d %q", resp.StatusCode, body)
	}
	for path, want := range map[string]int{
		"/run/default/web/main":                  http.StatusBadRequest, // no cmd
		"/run/default/web/init?cmd=ls":           http.StatusInternalServerError,
		"/run/default/gone/main?cmd=ls":          http.StatusNotFound,
		"/run/default/web/uid-other/main?cmd=ls": http.StatusNotFound,
	} {
		if resp, body := post(t, e, path, nil); resp.StatusCode != want {
			t.Errorf("%s: got %d %q, want %d", path, resp.StatusCode, body, want)
		}
	}
	resp, err := http.Get(e.api.URL + "/run/default/web/main?cmd=ls")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Errorf("GET /run: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
