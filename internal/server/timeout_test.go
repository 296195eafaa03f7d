package server

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/internal/testutil"
)

// A client that opens connections to 10250 or 10255 and never finishes its headers (or never
// starts its TLS handshake) is cut off after readHeaderTimeout instead of holding a connection
// and a goroutine for the 4 hours streaming requests may last.
func TestSlowClientsAreCutOff(t *testing.T) {
	defer func(d time.Duration) { readHeaderTimeout = d }(readHeaderTimeout)
	readHeaderTimeout = 300 * time.Millisecond
	reviews := &fakeReviews{}
	opts := webhookOptions(t, nil, reviews.client())
	opts.ReadOnlyPort = 1
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	_, srv := start(t, opts, Handlers{StatsSummary: ok, Metrics: ok, Exec: ok})
	const limit = 5 * time.Second

	roAddr := strings.TrimPrefix(srv.readOnlyURL, "http://")
	secureAddr := strings.TrimPrefix(srv.secureURL, "https://")
	took := map[string]time.Duration{}
	took["read-only, slow headers"] = testutil.SlowHeaders(t, dialTCP(t, roAddr), limit)
	took["secure, no handshake"] = testutil.SilentConn(t, secureAddr, limit)
	conn, err := tls.Dial("tcp", secureAddr, &tls.Config{RootCAs: srv.servingCAs, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	took["secure, slow headers"] = testutil.SlowHeaders(t, conn, limit)
	for what, d := range took {
		if d < readHeaderTimeout/2 {
			t.Errorf("%s: closed after %v, before the header timeout %v", what, d, readHeaderTimeout)
		}
	}
	// Well-behaved clients are still served on both ports.
	if got := do(t, http.DefaultClient, "GET", srv.readOnlyURL+"/healthz", ""); got.code != http.StatusOK {
		t.Errorf("read-only /healthz: %d %q", got.code, got.body)
	}
}
