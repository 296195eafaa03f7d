package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
)

func init() {
	pollInterval = 5 * time.Millisecond
	retryStart, retryMax = 5*time.Millisecond, 20*time.Millisecond
}

// signer is a fake API server's CSR side: one store of requests that it approves and signs
// with its CA at once (or denies, or leaves pending for approve), keeping what it was asked.
type signer struct {
	ca       *x509.Certificate
	caKey    *ecdsa.PrivateKey
	cs       *fake.Clientset
	lifetime time.Duration
	deny     bool
	manual   bool // leave requests pending until approve

	mu       sync.Mutex
	requests []*certificatesv1.CertificateSigningRequest
	csrs     []*x509.CertificateRequest
	serial   int64
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
	s := &signer{ca: ca, caKey: key, lifetime: time.Hour, cs: fake.NewClientset(), serial: 1}
	s.cs.PrependReactor("create", "certificatesigningrequests", s.create)
	return s
}

func (s *signer) client() kubeclient.Interface { return kubeclienttest.FromClientset(s.cs) }

// newClient is a NewClient giving the signer's client.
func (s *signer) newClient(*rest.Config) (kubeclient.Interface, error) { return s.client(), nil }

func (s *signer) csrClient() kubeclient.CertificateSigningRequestInterface {
	return s.client().CertificatesV1().CertificateSigningRequests()
}

func (s *signer) create(action k8stesting.Action) (bool, runtime.Object, error) {
	csr := action.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest).DeepCopy()
	gvr := certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	if _, err := s.cs.Tracker().Get(gvr, "", csr.Name); err == nil {
		return true, nil, apierrors.NewAlreadyExists(gvr.GroupResource(), csr.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return true, nil, err
	}
	s.requests = append(s.requests, csr.DeepCopy())
	s.csrs = append(s.csrs, req)
	switch {
	case s.deny:
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: v1.ConditionTrue, Reason: "NotToday"}}
	case !s.manual:
		if err := s.sign(csr, req); err != nil {
			return true, nil, err
		}
	}
	return true, csr, s.cs.Tracker().Add(csr)
}

// sign approves csr and puts a certificate for req in its status.
func (s *signer) sign(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	s.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(s.serial), Subject: req.Subject,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(s.lifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca, req.PublicKey, s.caKey)
	if err != nil {
		return err
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue}}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return nil
}

// approve signs the pending request name, as an approver and the signing controller would.
func (s *signer) approve(t *testing.T, name string) {
	t.Helper()
	csr, err := s.cs.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	err = s.sign(csr, req)
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.cs.CertificatesV1().CertificateSigningRequests().Update(context.Background(), csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (s *signer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *signer) request(i int) (*certificatesv1.CertificateSigningRequest, *x509.CertificateRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i], s.csrs[i]
}

// stored lists the request objects in the fake API.
func (s *signer) stored(t *testing.T) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	list, err := s.cs.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
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

// run starts m.Run and returns a stop function that cancels it and gives its error (again
// on later calls).
func run(m *Manager) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return sync.OnceValue(func() error { cancel(); return <-done })
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
