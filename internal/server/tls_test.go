package server

import (
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// With serverTLSBootstrap the served pair is whatever the certificate manager holds at the
// handshake; before the first is issued the handshake fails saying what to approve.
func TestServingCertificateFollowsTheManager(t *testing.T) {
	var current *tls.Certificate
	cfg, _, err := servingTLSConfig(&Options{ServingCertificate: func() *tls.Certificate { return current }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Certificates) != 0 {
		t.Fatal("a static pair next to the manager's")
	}
	if _, err := cfg.GetCertificate(&tls.ClientHelloInfo{}); err == nil || !strings.Contains(err.Error(), "kubelet-serving") {
		t.Errorf("before issue: %v, want a hint at the CSR", err)
	}
	current = &tls.Certificate{Certificate: [][]byte{{1}}}
	if got, err := cfg.GetCertificate(&tls.ClientHelloInfo{}); err != nil || got != current {
		t.Errorf("after issue: %v, %v", got, err)
	}
}

// A changed client CA file is trusted without a restart, and the old CA no longer is.
func TestClientCAFileIsReloaded(t *testing.T) {
	saved := clientCAReloadPeriod
	t.Cleanup(func() { clientCAReloadPeriod = saved }) // after the server's cleanup has stopped it
	clientCAReloadPeriod = 10 * time.Millisecond
	first, second := newTestCA(t, "first-ca"), newTestCA(t, "second-ca")
	file := filepath.Join(t.TempDir(), "ca.crt")
	copyFile(t, first.pemFile, file)
	opts := webhookOptions(t, nil, (&fakeReviews{allow: allowAll}).client())
	opts.Authentication.X509.ClientCAFile = file
	_, srv := start(t, opts, Handlers{})
	oldCert, newCert := first.clientCert(t, "alice"), second.clientCert(t, "carol")
	if got := do(t, srv.client(newCert), "GET", srv.secureURL+"/healthz", ""); got.code != http.StatusUnauthorized {
		t.Fatalf("before the change, the second CA's client: %d, want 401", got.code)
	}
	copyFile(t, second.pemFile, file)
	testutil.Eventually(t, "the new client CA trusted", func() bool {
		return do(t, srv.client(newCert), "GET", srv.secureURL+"/healthz", "").code == http.StatusOK
	})
	if got := do(t, srv.client(oldCert), "GET", srv.secureURL+"/healthz", ""); got.code != http.StatusUnauthorized {
		t.Errorf("the replaced CA's client: %d, want 401", got.code)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}
