package certificates

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/testutil"
)

// storedPair requests a client certificate from s and stores it, as a past bootstrap did.
func storedPair(t *testing.T, s *signer, store Store) {
	t.Helper()
	certPEM, keyPEM, err := request(context.Background(), s.csrClient(), store, clientRequest("n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	store.dropPendingKey()
}

// The manager renews at its deadline; a TLS server sees the old certificate before and the
// new one on the next request after, with no new client built.
func TestRotationSwitchesTheClientCertificate(t *testing.T) {
	s := newSigner(t)
	store := Store{Dir: t.TempDir(), Prefix: "kubelet-client"}
	storedPair(t, s, store)
	m, err := NewClientManager(store, "n", &rest.Config{}, s.newClient)
	if err != nil {
		t.Fatal(err)
	}
	renew := make(chan struct{})
	calls := 0
	m.deadline = func(*x509.Certificate) time.Time {
		if calls++; calls > 1 {
			return time.Now().Add(time.Hour) // one renewal only
		}
		<-renew
		return time.Now()
	}

	var seen []int64
	var mu sync.Mutex
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.TLS.PeerCertificates[0].SerialNumber.Int64())
		mu.Unlock()
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	defer srv.Close()
	get := transportTo(t, srv.URL, m)
	get()

	stop := run(m)
	renew <- struct{}{}
	testutil.Eventually(t, "rotated", func() bool { return s.count() == 2 && m.Current().Leaf.SerialNumber.Int64() == 3 })
	get()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int64{2, 3}) {
		t.Errorf("server saw serials %v, want the first certificate then the renewed one", seen)
	}
	if cur, _ := store.Current(); cur.Leaf.SerialNumber.Int64() != 3 {
		t.Errorf("store's current serial %v, want 3", cur.Leaf.SerialNumber)
	}
}

// A renewal the signer denies is not fatal while the certificate is valid: the next attempt
// makes a new request with a new key.
func TestDeniedRenewalIsRetriedWithANewKey(t *testing.T) {
	s := newSigner(t)
	store := Store{Dir: t.TempDir(), Prefix: "kubelet-client"}
	storedPair(t, s, store)
	m, err := NewClientManager(store, "n", &rest.Config{}, s.newClient)
	if err != nil {
		t.Fatal(err)
	}
	m.deadline = func(*x509.Certificate) time.Time { return time.Now() }
	s.mu.Lock()
	s.deny = true
	s.mu.Unlock()
	stop := run(m)
	testutil.Eventually(t, "a denied renewal", func() bool { return s.count() >= 2 })
	s.mu.Lock()
	s.deny = false
	s.mu.Unlock()
	testutil.Eventually(t, "a renewal after the denial", func() bool { return m.Current().Leaf.SerialNumber.Int64() > 2 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v; a denied renewal must not stop it", err)
	}
	names := map[string]bool{}
	for _, r := range s.stored(t) {
		names[r.Name] = true
	}
	if len(names) < 3 {
		t.Errorf("requests %v: want a new one (new key, new name) after the denial", names)
	}
}

// With rotation and a bootstrap kubeconfig, a certificate that expires while its renewal
// keeps failing (the API server refuses it) is replaced through the bootstrap credentials.
func TestExpiryDuringFailingRotationFallsBackToBootstrap(t *testing.T) {
	f := newFixture(t)
	f.s.lifetime = 1500 * time.Millisecond
	storedPair(t, f.s, f.store)
	_, m := f.identity(t, true)
	m.renewalClient = func() (kubeclient.CertificateSigningRequestInterface, error) { return refusingCSRs{}, nil }
	m.deadline = func(*x509.Certificate) time.Time { return time.Now() }
	first := m.Current()
	stop := run(m)
	defer stop()
	testutil.Eventually(t, "a new certificate after expiry", func() bool {
		return m.Current().Leaf.SerialNumber.Cmp(first.Leaf.SerialNumber) != 0
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(f.tokens) != 1 || f.tokens[0] != bootstrapToken {
		t.Errorf("bootstrap clients %q, want one with the bootstrap token", f.tokens)
	}
}

// refusingCSRs answers as an API server that no longer accepts the node's certificate.
type refusingCSRs struct{}

func (refusingCSRs) Create(context.Context, *certificatesv1.CertificateSigningRequest, metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error) {
	return nil, apierrors.NewUnauthorized("certificate has expired")
}

func (refusingCSRs) Get(_ context.Context, name string, _ metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, name)
}

// serverTLSBootstrap: with no serving pair yet the manager requests one at once, from the
// kubelet-serving signer with the node's addresses and names as SANs.
func TestServingManagerRequestsAtOnce(t *testing.T) {
	s := newSigner(t)
	store := Store{Dir: t.TempDir(), Prefix: "kubelet-server"}
	m, err := NewServingManager(store, "node-a", []net.IP{net.ParseIP("192.0.2.7")}, []string{"node-a"}, s.csrClient())
	if err != nil {
		t.Fatal(err)
	}
	if m.Current() != nil {
		t.Fatal("a serving certificate before any was issued")
	}
	stop := run(m)
	testutil.Eventually(t, "a serving certificate", func() bool { return m.Current() != nil })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	req, csr := s.request(0)
	if req.Spec.SignerName != "kubernetes.io/kubelet-serving" ||
		!slices.Equal(req.Spec.Usages, []certificatesv1.KeyUsage{"digital signature", "server auth"}) {
		t.Errorf("signer %q usages %v", req.Spec.SignerName, req.Spec.Usages)
	}
	if csr.Subject.CommonName != "system:node:node-a" || len(csr.IPAddresses) != 1 || !csr.IPAddresses[0].Equal(net.ParseIP("192.0.2.7")) ||
		!slices.Equal(csr.DNSNames, []string{"node-a"}) {
		t.Errorf("subject %v IPs %v DNS %v", csr.Subject, csr.IPAddresses, csr.DNSNames)
	}
	if _, err := os.Stat(store.CurrentPath()); err != nil {
		t.Error(err)
	}
}
