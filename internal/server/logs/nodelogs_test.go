package logs

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNodeLogsServesFilesAndRefusesEscapes(t *testing.T) {
	top := t.TempDir()
	logDir := filepath.Join(top, "log")
	if err := os.MkdirAll(filepath.Join(logDir, "pods"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(logDir, "syslog"), "system log\n")
	writeFile(t, filepath.Join(logDir, "pods", "a.log"), "pod log\n")
	writeFile(t, filepath.Join(top, "secret"), "do not serve\n")
	if err := os.Symlink(filepath.Join(top, "secret"), filepath.Join(logDir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pods/a.log", filepath.Join(logDir, "inside")); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/logs/", NewNodeLogsHandler(logDir))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/logs/syslog", 200, "system log\n"},
		{"GET", "/logs/pods/a.log", 200, "pod log\n"},
		{"GET", "/logs/inside", 200, "pod log\n"},
		{"GET", "/logs/", 200, `<a href="syslog">syslog</a>`},
		{"GET", "/logs/pods/", 200, `<a href="a.log">a.log</a>`},
		{"GET", "/logs/escape", 403, ""},
		{"GET", "/logs/../secret", 404, ""},
		{"GET", "/logs/%2e%2e/secret", 404, ""},
		{"GET", "/logs/missing", 404, ""},
		{"GET", "/logs/?query=kubelet", 501, "not supported"},
		{"POST", "/logs/syslog", 405, ""},
	} {
		code, body := get(tc.method, tc.path)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %q, want %d containing %q", tc.method, tc.path, code, body, tc.code, tc.body)
		}
		if strings.Contains(body, "do not serve") {
			t.Errorf("%s leaked a file outside the log directory", tc.path)
		}
	}
	// A directory without its slash redirects within /logs/.
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(srv.URL + "/logs/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != "pods/" {
		t.Errorf("redirect %d %q", resp.StatusCode, loc)
	}
}
