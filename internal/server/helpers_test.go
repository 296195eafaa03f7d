package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/lib/kubeclient/kubeclienttest"
)

// testCA is a throw-away certificate authority for client certificates.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	pemFile string
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	file := filepath.Join(t.TempDir(), name+".crt")
	writePEM(t, file, "CERTIFICATE", der)
	return &testCA{cert: cert, key: key, pemFile: file}
}

// clientCert issues a client certificate for user cn in groups orgs.
func (ca *testCA) clientCert(t *testing.T, cn string, orgs ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, file, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeReviews answers TokenReviews and SubjectAccessReviews from tables and counts the calls.
type fakeReviews struct {
	mu         sync.Mutex
	tokens     map[string]authnv1.UserInfo // valid tokens
	allow      func(spec authzv1.SubjectAccessReviewSpec) bool
	tokenCalls int
	sars       []authzv1.SubjectAccessReviewSpec
}

func (f *fakeReviews) client() *fake.Clientset {
	c := fake.NewSimpleClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenReview).DeepCopy()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tokenCalls++
		if u, ok := f.tokens[review.Spec.Token]; ok {
			review.Status = authnv1.TokenReviewStatus{Authenticated: true, User: u}
		}
		return true, review, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview).DeepCopy()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.sars = append(f.sars, review.Spec)
		review.Status.Allowed = f.allow != nil && f.allow(review.Spec)
		return true, review, nil
	})
	return c
}

func (f *fakeReviews) counts() (tokens, sars int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenCalls, len(f.sars)
}

func (f *fakeReviews) lastSAR() authzv1.SubjectAccessReviewSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sars[len(f.sars)-1]
}

// webhookOptions are options as a cluster-mode nodelet has them: x509 + token webhook,
// anonymous off, Webhook authorization.
func webhookOptions(t *testing.T, ca *testCA, client *fake.Clientset) Options {
	t.Helper()
	opts := Options{
		Address: "127.0.0.1", NodeName: "node-a", CertDir: t.TempDir(), Client: kubeclienttest.FromClientset(client),
		EnableDebuggingHandlers: true, EnableSystemLogHandler: true,
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
			Webhook:   kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
		},
		Authorization: kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeWebhook},
	}
	opts.Authentication.Webhook.CacheTTL.Duration = 2 * time.Minute
	opts.Authorization.Webhook.CacheAuthorizedTTL.Duration = 5 * time.Minute
	opts.Authorization.Webhook.CacheUnauthorizedTTL.Duration = 30 * time.Second
	if ca != nil {
		opts.Authentication.X509.ClientCAFile = ca.pemFile
	}
	return opts
}

// running is a Server serving on loopback ports for one test.
type running struct {
	secureURL   string
	readOnlyURL string
	servingCAs  *x509.CertPool
	done        chan error
	cancel      context.CancelFunc
}

func start(t *testing.T, opts Options, h Handlers) (*Server, *running) {
	t.Helper()
	s, err := New(opts, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	host := opts.Address
	if host == "" {
		host = "127.0.0.1"
	}
	secureLn, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var roLn net.Listener
	r := &running{secureURL: "https://" + secureLn.Addr().String(), done: make(chan error, 1)}
	if s.readOnly != nil {
		if roLn, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			t.Fatal(err)
		}
		r.readOnlyURL = "http://" + roLn.Addr().String()
	}
	r.servingCAs = x509.NewCertPool()
	served := s.tls.Certificates
	if s.files != nil {
		served = []tls.Certificate{*s.files.pair}
	}
	for _, c := range served[0].Certificate {
		cert, _ := x509.ParseCertificate(c)
		r.servingCAs.AddCert(cert)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- s.serve(ctx, secureLn, roLn) }()
	t.Cleanup(func() {
		cancel()
		if err := <-r.done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s, r
}

// client trusts the server's certificate and presents certs, if any.
func (r *running) client(certs ...tls.Certificate) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: r.servingCAs, Certificates: certs,
	}}}
}

type response struct {
	code int
	body string
	hdr  http.Header
}

func do(t *testing.T, c *http.Client, method, url, token string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: string(body), hdr: resp.Header}
}

func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}
