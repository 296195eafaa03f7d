package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/testutil"
)

const bootstrapToken = "abcdef.0123456789abcdef"

// fixture is a node's --kubeconfig, --bootstrap-kubeconfig and --cert-dir against a signer.
type fixture struct {
	s          *signer
	store      Store
	kubeconfig string
	bootstrap  string

	mu     sync.Mutex
	tokens []string // the bearer token of each bootstrap client built
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s := newSigner(t)
	dir := t.TempDir()
	f := &fixture{s: s, store: Store{Dir: filepath.Join(dir, "pki"), Prefix: "kubelet-client"},
		kubeconfig: filepath.Join(dir, "kubelet.kubeconfig"), bootstrap: filepath.Join(dir, "bootstrap.kubeconfig")}
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.ca.Raw}))
	content := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: "` + ca + `"}}]
users: [{name: u, user: {token: ` + bootstrapToken + `}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(f.bootstrap, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) options(rotate bool) ClientOptions {
	return ClientOptions{NodeName: "node-a", Kubeconfig: f.kubeconfig, BootstrapKubeconfig: f.bootstrap, Store: f.store, Rotate: rotate,
		NewClient: func(cfg *rest.Config) (kubeclient.Interface, error) {
			f.mu.Lock()
			f.tokens = append(f.tokens, cfg.BearerToken)
			f.mu.Unlock()
			return f.s.client(), nil
		}}
}

// identity is NewClientIdentity, failing the test on an error.
func (f *fixture) identity(t *testing.T, rotate bool) (*rest.Config, *Manager) {
	t.Helper()
	cfg, m, err := NewClientIdentity(f.options(rotate))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, m
}

// With no certificate the identity is built at once, without asking anything: the request
// is made by Run, in the background, with the bootstrap token; once issued the pair is in the
// store, --kubeconfig points at it and Ready is closed. A restart then uses it as is.
func TestBootstrapRunsInTheBackground(t *testing.T) {
	f := newFixture(t)
	cfg, m := f.identity(t, false)
	if m.Current() != nil || isClosed(m.Ready()) || f.s.count() != 0 {
		t.Fatalf("before Run: current %v, ready %v, %d requests; want nothing yet", m.Current(), isClosed(m.Ready()), f.s.count())
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "" || cfg.Transport == nil {
		t.Errorf("API config host %q token %q transport %v: want the bootstrap server, no token, the rotating transport", cfg.Host, cfg.BearerToken, cfg.Transport)
	}
	stop := run(m)
	testutil.Eventually(t, "ready after TLS bootstrap", func() bool { return isClosed(m.Ready()) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.tokens, []string{bootstrapToken}) {
		t.Errorf("bootstrap clients with tokens %q, want one with the bootstrap kubeconfig's", f.tokens)
	}
	req, csr := f.s.request(0)
	if req.Spec.SignerName != "kubernetes.io/kube-apiserver-client-kubelet" ||
		!slices.Equal(req.Spec.Usages, []certificatesv1.KeyUsage{"digital signature", "client auth"}) || !strings.HasPrefix(req.Name, "node-csr-") {
		t.Errorf("request %s: signer %q usages %v", req.Name, req.Spec.SignerName, req.Spec.Usages)
	}
	if csr.Subject.CommonName != "system:node:node-a" || !slices.Equal(csr.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("subject %v", csr.Subject)
	}
	kc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if kc.Host != "https://127.0.0.1:6443" || len(kc.CAData) == 0 || kc.CertFile != f.store.CurrentPath() || kc.KeyFile != f.store.CurrentPath() {
		t.Errorf("kubeconfig host %q ca %d bytes cert %q key %q", kc.Host, len(kc.CAData), kc.CertFile, kc.KeyFile)
	}
	if target, err := os.Readlink(f.store.CurrentPath()); err != nil || !strings.HasPrefix(target, "kubelet-client-2") {
		t.Errorf("current link -> %q (%v), want a dated kubelet-client file", target, err)
	}
	if _, err := os.Stat(f.store.PendingKeyPath()); !os.IsNotExist(err) {
		t.Errorf("pending key still there after the certificate was stored: %v", err)
	}

	// Restart: the kubeconfig is valid, nothing is requested.
	_, again := f.identity(t, false)
	if again.Current() == nil || again.Current().Leaf.SerialNumber.Cmp(m.Current().Leaf.SerialNumber) != 0 {
		t.Fatal("a restart does not start from the stored certificate")
	}
	stop = run(again)
	testutil.Eventually(t, "ready at once", func() bool { return isClosed(again.Ready()) })
	if err := stop(); err != nil || f.s.count() != 1 {
		t.Errorf("restart: %v, %d requests; want no new one", err, f.s.count())
	}
}

// A certificate that expires while nodelet runs (rotation off, or rotation failing) is
// replaced by a new TLS bootstrap with a new key, and connections made afterwards present the
// new certificate, without a new client.
func TestExpiredCertificateBootstrapsAgain(t *testing.T) {
	f := newFixture(t)
	f.s.lifetime = 1500 * time.Millisecond
	_, m := f.identity(t, false)
	var seen []int64
	var mu sync.Mutex
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if len(r.TLS.PeerCertificates) > 0 {
			seen = append(seen, r.TLS.PeerCertificates[0].SerialNumber.Int64())
		}
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()
	get := transportTo(t, srv.URL, m)

	stop := run(m)
	defer stop()
	testutil.Eventually(t, "first certificate", func() bool { return m.Current() != nil })
	first := m.Current()
	get()
	testutil.Eventually(t, "a second TLS bootstrap after expiry", func() bool {
		cur := m.Current()
		return cur.Leaf.SerialNumber.Cmp(first.Leaf.SerialNumber) != 0 && !expired(cur)
	})
	second := m.Current()
	get()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if f.tokens[0] != bootstrapToken || f.s.count() < 2 {
		t.Errorf("tokens %q, %d requests; want bootstrap requests", f.tokens, f.s.count())
	}
	_, csr1 := f.s.request(0)
	_, csr2 := f.s.request(1)
	if samePublicKey(csr1.PublicKey, csr2.PublicKey) {
		t.Error("the second bootstrap reused the first key")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != first.Leaf.SerialNumber.Int64() || seen[1] != second.Leaf.SerialNumber.Int64() {
		t.Errorf("server saw serials %v, want %v then %v", seen, first.Leaf.SerialNumber, second.Leaf.SerialNumber)
	}
}

// transportTo returns a GET of url through a transport presenting m's certificates.
func transportTo(t *testing.T, url string, m *Manager) func() {
	t.Helper()
	cfg := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if err := UseRotatingCertificate(cfg, m); err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// A denied bootstrap request stops nodelet (Run's error) with the reason; the key is dropped,
// so the next start asks afresh rather than finding the same denial.
func TestDeniedBootstrapStopsWithTheReason(t *testing.T) {
	f := newFixture(t)
	f.s.deny = true
	_, m := f.identity(t, false)
	err := m.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "denied: NotToday") || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("Run: %v; want the denial and what to do", err)
	}
	if isClosed(m.Ready()) {
		t.Error("ready without a certificate")
	}
	if _, err := os.Stat(f.store.PendingKeyPath()); !os.IsNotExist(err) {
		t.Errorf("the denied request's key was kept: %v", err)
	}
}

// A restart while the request is pending keeps the key on disk and finds the same request
// (no second one); approved after the restart, its certificate is for that key.
func TestRestartWhilePendingKeepsTheKeyAndTheRequest(t *testing.T) {
	f := newFixture(t)
	f.s.manual = true
	_, m := f.identity(t, false)
	stop := run(m)
	testutil.Eventually(t, "a pending request", func() bool { return f.s.count() == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(f.store.PendingKeyPath())
	if err != nil {
		t.Fatalf("no pending key kept: %v", err)
	}
	key, err := parseECKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}

	_, restarted := f.identity(t, false)
	creates := func() int {
		n := 0
		for _, a := range f.s.cs.Actions() {
			if a.GetVerb() == "create" {
				n++
			}
		}
		return n
	}
	stop = run(restarted)
	defer stop()
	testutil.Eventually(t, "the restarted node asking again", func() bool { return creates() == 2 })
	f.s.approve(t, f.s.requests[0].Name)
	testutil.Eventually(t, "ready with the approved request's certificate", func() bool { return isClosed(restarted.Ready()) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := f.s.stored(t); len(got) != 1 || f.s.count() != 1 {
		t.Errorf("%d requests in the API (%d made), want the one", len(got), f.s.count())
	}
	if pub, ok := restarted.Current().Leaf.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		t.Error("the certificate is not for the kept key")
	}
	if _, err := os.Stat(f.store.PendingKeyPath()); !os.IsNotExist(err) {
		t.Errorf("pending key kept after the certificate was stored: %v", err)
	}
}

// A request under our name that another key made (or one unusable otherwise) is not waited
// for: the key is dropped and the next attempt makes a new request.
func TestAnotherKeysRequestUnderOurNameIsNotUsed(t *testing.T) {
	f := newFixture(t)
	key, _, err := f.store.pendingKey()
	if err != nil {
		t.Fatal(err)
	}
	r := clientRequest("node-a")
	foreign := foreignRequest(t, r)
	foreign.Name = csrName(&key.PublicKey, r)
	if _, err := f.s.cs.CertificatesV1().CertificateSigningRequests().Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, err = request(context.Background(), f.s.csrClient(), f.store, r)
	if err == nil || !strings.Contains(err.Error(), "another key's request") {
		t.Fatalf("request: %v; want it refused as another key's", err)
	}
	if _, err := os.Stat(f.store.PendingKeyPath()); !os.IsNotExist(err) {
		t.Fatalf("kept a key whose name is taken: %v", err)
	}
	if _, _, err := request(context.Background(), f.s.csrClient(), f.store, r); err != nil {
		t.Fatalf("the next attempt: %v", err)
	}
}

// foreignRequest is a request for r made with another key.
func foreignRequest(t *testing.T, r certRequest) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, r.tmpl, other)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: r.signer, Usages: r.usages,
	}}
}

// A joined node whose bootstrap kubeconfig was removed (kubeadm does) keeps using its valid
// kubeconfig; with neither usable the error names the bootstrap kubeconfig.
func TestMissingBootstrapKubeconfigAfterJoining(t *testing.T) {
	f := newFixture(t)
	_, m := f.identity(t, false)
	stop := run(m)
	testutil.Eventually(t, "bootstrapped", func() bool { return isClosed(m.Ready()) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.bootstrap); err != nil {
		t.Fatal(err)
	}
	cfg, again, err := NewClientIdentity(f.options(false))
	if err != nil || again != nil || cfg.CertFile != f.store.CurrentPath() {
		t.Fatalf("without the bootstrap kubeconfig: %v, manager %v, cert %q; want the kubeconfig as is", err, again, cfg.CertFile)
	}
	if err := os.Remove(f.kubeconfig); err != nil {
		t.Fatal(err)
	}
	if _, _, err := NewClientIdentity(f.options(false)); err == nil || !strings.Contains(err.Error(), "--bootstrap-kubeconfig") {
		t.Fatalf("with neither kubeconfig: %v", err)
	}
}
