package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/lib/metrics"
	"github.com/nodelet/nodelet/internal/server/healthz"
	"github.com/nodelet/nodelet/internal/testutil"
)

// servedCN is the common name of the certificate the server presents.
func servedCN(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// writePair writes a fresh self-signed pair for cn into dir as kubelet.crt/kubelet.key.
func writePair(t *testing.T, dir, cn string) {
	t.Helper()
	tmp := t.TempDir()
	if _, _, err := ensureSelfSignedCert(&Options{CertDir: tmp, NodeName: cn}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kubelet.key", "kubelet.crt"} {
		raw, err := os.ReadFile(filepath.Join(tmp, f))
		if err != nil {
			t.Fatal(err)
		}
		// Into place by rename, as cert-manager and kubelet-style writers do.
		if err := os.WriteFile(filepath.Join(dir, f+".tmp"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, f+".tmp"), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRotatedServingCertificateFilesAreServed(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "first")
	opts := alwaysAllowOptions(t)
	opts.TLSCertFile, opts.TLSKeyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	opts.ReloadCertificateFiles = true
	_, srv := start(t, opts, Handlers{})
	addr := strings.TrimPrefix(srv.secureURL, "https://")
	if cn := servedCN(t, addr); !strings.HasPrefix(cn, "first@") {
		t.Fatalf("served %q, want the first pair", cn)
	}
	writePair(t, dir, "second")
	testutil.Eventually(t, "the rotated pair served", func() bool { return strings.HasPrefix(servedCN(t, addr), "second@") })

	// A certificate that does not match its key (written one file at a time) keeps the last good pair.
	if err := os.WriteFile(opts.TLSKeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if cn := servedCN(t, addr); !strings.HasPrefix(cn, "second@") {
		t.Errorf("after a broken write served %q, want the last good pair", cn)
	}
}

func TestServingCertificateFilesReadOnceWithTheGateOff(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "first")
	opts := alwaysAllowOptions(t)
	opts.TLSCertFile, opts.TLSKeyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	s, err := New(opts, Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	if s.files != nil || len(s.tls.Certificates) != 1 {
		t.Fatalf("static pair expected with ReloadCertificateFiles off")
	}
	leaf, _ := x509.ParseCertificate(s.tls.Certificates[0].Certificate[0])
	if !strings.HasPrefix(leaf.Subject.CommonName, "first@") {
		t.Errorf("served %q", leaf.Subject.CommonName)
	}
}

func TestHealthzRecordsSLIs(t *testing.T) {
	opts := alwaysAllowOptions(t)
	opts.HealthChecks = map[string]healthz.Check{"pleg": func() error { return errors.New("relist stuck") }}
	opts.ReadOnlyPort = 1
	_, srv := start(t, opts, Handlers{MetricsSLIs: metrics.SLIHandler()})
	if got := do(t, srv.client(), "GET", srv.secureURL+"/healthz", ""); got.code != http.StatusInternalServerError {
		t.Fatalf("/healthz: %d", got.code)
	}
	for _, url := range []string{srv.secureURL, srv.readOnlyURL} {
		got := do(t, srv.client(), "GET", url+"/metrics/slis", "")
		for _, want := range []string{
			`kubernetes_healthcheck{name="pleg",type="healthz"} 0`,
			`kubernetes_healthcheck{name="ping",type="healthz"} 1`,
			`kubernetes_healthchecks_total{name="pleg",status="error",type="healthz"}`,
		} {
			if got.code != http.StatusOK || !strings.Contains(got.body, want) {
				t.Errorf("%s/metrics/slis: %d, no %s in\n%s", url, got.code, want, got.body)
			}
		}
	}
}
