package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/internal/kubeclient"
	"github.com/nodelet/nodelet/internal/kubeclient/kubeclienttest"
)

func init() { pollInterval = 5 * time.Millisecond }

// signer is a fake API server's CSR side: it names, approves and signs every request with its
// CA (or denies them), and keeps what it was asked.
type signer struct {
	ca       *x509.Certificate
	caKey    *ecdsa.PrivateKey
	lifetime time.Duration
	deny     bool

	mu       sync.Mutex
	requests []*certificatesv1.CertificateSigningRequest
	csrs     []*x509.CertificateRequest
}

func newSigner(t *testing.T) *signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &signer{ca: ca, caKey: key, lifetime: time.Hour}
}

func (s *signer) client() kubeclient.Interface {
	cs := fake.NewSimpleClientset()
	cs.PrependReactor("create", "certificatesigningrequests", func(action k8stesting.Action) (bool, runtime.Object, error) {
		csr := action.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest).DeepCopy()
		s.mu.Lock()
		defer s.mu.Unlock()
		csr.Name = fmt.Sprintf("csr-%d", len(s.requests))
		s.requests = append(s.requests, csr.DeepCopy())
		block, _ := pem.Decode(csr.Spec.Request)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return true, nil, err
		}
		s.csrs = append(s.csrs, req)
		if s.deny {
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: v1.ConditionTrue, Reason: "NotToday"}}
		} else {
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(len(s.requests) + 1)), Subject: req.Subject,
				NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(s.lifetime),
				KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, req.PublicKey, s.caKey)
			if err != nil {
				return true, nil, err
			}
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue}}
			csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		}
		return true, csr, cs.Tracker().Add(csr)
	})
	return kubeclienttest.FromClientset(cs)
}

func (s *signer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func writeBootstrapKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "bootstrap.kubeconfig")
	content := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: ` +
		fmt.Sprintf("%q", "Y2E=") + `}}]
users: [{name: u, user: {token: abcdef.0123456789abcdef}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBootstrapRequestsANodeCertificateAndWritesTheKubeconfig(t *testing.T) {
	s := newSigner(t)
	dir := t.TempDir()
	store := Store{Dir: filepath.Join(dir, "pki"), Prefix: "kubelet-client"}
	kubeconfig := filepath.Join(dir, "kubelet.kubeconfig")
	bootstrap := writeBootstrapKubeconfig(t, dir)
	var usedToken string
	newClient := func(cfg *rest.Config) (kubeclient.Interface, error) {
		usedToken = cfg.BearerToken
		return s.client(), nil
	}
	if err := Bootstrap(context.Background(), kubeconfig, bootstrap, store, "node-a", newClient); err != nil {
		t.Fatal(err)
	}
	if usedToken != "abcdef.0123456789abcdef" {
		t.Errorf("the request went with token %q, want the bootstrap kubeconfig's", usedToken)
	}
	req, csr := s.requests[0], s.csrs[0]
	if req.Spec.SignerName != "kubernetes.io/kube-apiserver-client-kubelet" ||
		!slices.Equal(req.Spec.Usages, []certificatesv1.KeyUsage{"digital signature", "client auth"}) {
		t.Errorf("signer %q usages %v", req.Spec.SignerName, req.Spec.Usages)
	}
	if csr.Subject.CommonName != "system:node:node-a" || !slices.Equal(csr.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject %v", csr.Subject)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || string(cfg.CAData) != "ca" || cfg.CertFile != store.CurrentPath() || cfg.KeyFile != store.CurrentPath() {
		t.Errorf("kubeconfig host %q ca %q cert %q key %q", cfg.Host, cfg.CAData, cfg.CertFile, cfg.KeyFile)
	}
	if target, err := os.Readlink(store.CurrentPath()); err != nil || !strings.HasPrefix(target, "kubelet-client-2") {
		t.Errorf("current link -> %q (%v), want a dated kubelet-client file", target, err)
	}
	if cert, err := store.Current(); err != nil || cert.Leaf.Subject.CommonName != "system:node:node-a" {
		t.Fatalf("stored pair: %v", err)
	}

	// A valid kubeconfig is kept: no second request.
	if err := Bootstrap(context.Background(), kubeconfig, bootstrap, store, "node-a", newClient); err != nil || s.count() != 1 {
		t.Errorf("second bootstrap: %v, %d requests; want none", err, s.count())
	}
}

func TestBootstrapAgainWhenTheCertificateExpired(t *testing.T) {
	s := newSigner(t)
	s.lifetime = -time.Second // issued already expired
	dir := t.TempDir()
	store := Store{Dir: dir, Prefix: "kubelet-client"}
	kubeconfig, bootstrap := filepath.Join(dir, "kubelet.kubeconfig"), writeBootstrapKubeconfig(t, dir)
	newClient := func(*rest.Config) (kubeclient.Interface, error) { return s.client(), nil }
	for range 2 {
		if err := Bootstrap(context.Background(), kubeconfig, bootstrap, store, "n", newClient); err != nil {
			t.Fatal(err)
		}
	}
	if s.count() != 2 {
		t.Errorf("%d requests, want a new one for the expired certificate", s.count())
	}
}

func TestBootstrapDeniedSaysSo(t *testing.T) {
	s := newSigner(t)
	s.deny = true
	dir := t.TempDir()
	err := Bootstrap(context.Background(), filepath.Join(dir, "k"), writeBootstrapKubeconfig(t, dir), Store{Dir: dir, Prefix: "p"}, "n",
		func(*rest.Config) (kubeclient.Interface, error) { return s.client(), nil })
	if err == nil || !strings.Contains(err.Error(), "denied: NotToday") {
		t.Errorf("err %v, want the denial", err)
	}
}

// The manager renews at its deadline; a TLS server sees the old certificate before and the
// new one on the next request after, with no new client built.
func TestRotationSwitchesTheClientCertificate(t *testing.T) {
	s := newSigner(t)
	dir := t.TempDir()
	store := Store{Dir: dir, Prefix: "kubelet-client"}
	client := s.client()
	certPEM, keyPEM, err := request(context.Background(), client.CertificatesV1().CertificateSigningRequests(), ClientSigner, clientUsages,
		&x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	m, err := NewClientManager(store, "n", &rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.SetClient(client.CertificatesV1().CertificateSigningRequests())
	renew := make(chan struct{})
	m.deadline = func(*x509.Certificate) time.Time { <-renew; return time.Now() }

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
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if err := UseRotatingCertificate(cfg, m); err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		resp, err := httpClient.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	renew <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for s.count() < 2 || m.Current().Leaf.SerialNumber.Int64() != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("not rotated: %d requests", s.count())
		}
		time.Sleep(5 * time.Millisecond)
	}
	get()
	cancel()
	close(renew)
	<-done
	if !slices.Equal(seen, []int64{2, 3}) {
		t.Errorf("server saw serials %v, want the first certificate then the renewed one", seen)
	}
	if cur, _ := store.Current(); cur.Leaf.SerialNumber.Int64() != 3 {
		t.Errorf("store's current serial %v, want 3", cur.Leaf.SerialNumber)
	}
}

// serverTLSBootstrap: with no serving pair yet the manager requests one at once, from the
// kubelet-serving signer with the node's addresses and names as SANs.
func TestServingManagerRequestsAtOnce(t *testing.T) {
	s := newSigner(t)
	store := Store{Dir: t.TempDir(), Prefix: "kubelet-server"}
	m, err := NewServingManager(store, "node-a", []net.IP{net.ParseIP("192.0.2.7")}, []string{"node-a"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Current() != nil {
		t.Fatal("a serving certificate before any was issued")
	}
	m.SetClient(s.client().CertificatesV1().CertificateSigningRequests())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for m.Current() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no serving certificate issued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	req, csr := s.requests[0], s.csrs[0]
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
