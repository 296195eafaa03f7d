package certificates

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/kubeclient"
	"github.com/nodelet/nodelet/internal/lib/metrics"
)

// Retries of a failed request: 2 s doubling to 32 s, then every 32 s, as upstream.
var (
	retryStart = 2 * time.Second
	retryMax   = 32 * time.Second
)

// requestTimeout bounds one wait for a request to be issued; the next attempt finds the same
// request again (same key), so nothing is abandoned.
const requestTimeout = 15 * time.Minute

// Manager holds one of the node's certificates (client or serving). With rotation it renews
// it at 70–90 % of its lifetime (a random point, as upstream, so a fleet bootstrapped together
// does not renew together); with a bootstrap kubeconfig it makes the first client certificate
// and a new one whenever the current one has expired.
type Manager struct {
	store  Store
	req    certRequest
	kind   string        // "client" or "serving", for logs
	rotate bool          // renew before expiry with the certificate itself
	boot   *bootstrapper // nil: no TLS bootstrap

	mu      sync.RWMutex
	current *tls.Certificate
	// renewalClient gives the client a renewal is requested with (it authenticates with
	// Current).
	renewalClient func() (kubeclient.CertificateSigningRequestInterface, error)
	rotated       []func()
	deadline      func(*x509.Certificate) time.Time

	ready     chan struct{}
	readyOnce sync.Once
}

func newManager(store Store, req certRequest, kind string, current *tls.Certificate) *Manager {
	return &Manager{store: store, req: req, kind: kind, rotate: true, current: current,
		deadline: rotationDeadline, ready: make(chan struct{})}
}

// NewClientManager starts from the store's current pair or, when the store has none yet,
// from the kubeconfig's client certificate and key (files or inline data). Renewals are
// requested with a client newClient builds on kubeconfig (see clientOn).
func NewClientManager(store Store, nodeName string, kubeconfig *rest.Config, newClient NewClient) (*Manager, error) {
	cert, err := store.Current()
	if errors.Is(err, os.ErrNotExist) {
		cert, err = kubeconfigPair(kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("client certificate for rotation: %w (with rotateCertificates the kubeconfig needs a client certificate, or use --bootstrap-kubeconfig)", err)
	}
	m := newManager(store, clientRequest(nodeName), "client", cert)
	m.renewalClient = clientOn(kubeconfig, newClient)
	return m, nil
}

// clientOn builds the client renewals are requested with on first use: cfg is made to present
// the manager's own certificate (UseRotatingCertificate) only once the manager exists.
func clientOn(cfg *rest.Config, newClient NewClient) func() (kubeclient.CertificateSigningRequestInterface, error) {
	return sync.OnceValues(func() (kubeclient.CertificateSigningRequestInterface, error) {
		c, err := newClient(cfg)
		if err != nil {
			return nil, fmt.Errorf("API client for certificate renewal: %w", err)
		}
		return c.CertificatesV1().CertificateSigningRequests(), nil
	})
}

// NewServingManager manages the serving certificate of the kubelet API (serverTLSBootstrap):
// signer kubernetes.io/kubelet-serving, the node's addresses and host names as SANs. Until
// the first one is issued Current is nil. Its requests are made with csrs.
func NewServingManager(store Store, nodeName string, ips []net.IP, dnsNames []string, csrs kubeclient.CertificateSigningRequestInterface) (*Manager, error) {
	cert, err := store.Current()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	tmpl := nodeSubject(nodeName)
	tmpl.IPAddresses, tmpl.DNSNames = ips, dnsNames
	m := newManager(store, certRequest{signer: ServingSigner, usages: servingUsages, tmpl: tmpl}, "serving", cert)
	m.renewalClient = func() (kubeclient.CertificateSigningRequestInterface, error) { return csrs, nil }
	return m, nil
}

func clientRequest(nodeName string) certRequest {
	return certRequest{signer: ClientSigner, usages: clientUsages, tmpl: nodeSubject(nodeName)}
}

func nodeSubject(nodeName string) *x509.CertificateRequest {
	return &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}}
}

func kubeconfigPair(cfg *rest.Config) (*tls.Certificate, error) {
	var pair tls.Certificate
	var err error
	switch {
	case len(cfg.CertData) > 0 && len(cfg.KeyData) > 0:
		pair, err = tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	case cfg.CertFile != "" && cfg.KeyFile != "":
		pair, err = tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	default:
		return nil, errors.New("the kubeconfig has no client certificate and key")
	}
	if err != nil {
		return nil, err
	}
	pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0])
	return &pair, err
}

// Current is the certificate to present now.
func (m *Manager) Current() *tls.Certificate {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.current
}

// Ready is closed once the manager holds an unexpired certificate (at once when it starts
// with one; after TLS bootstrap otherwise).
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// OnRotate registers f to run after each renewal (e.g. close connections using the old one).
func (m *Manager) OnRotate(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rotated = append(m.rotated, f)
}

// rotationDeadline is a random point in the last 70–90 % of the certificate's lifetime.
func rotationDeadline(c *x509.Certificate) time.Time {
	total := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(time.Duration(float64(total) * (0.7 + 0.2*rand.Float64())))
}

func expired(c *tls.Certificate) bool { return !time.Now().Before(c.Leaf.NotAfter) }

// Run keeps the certificate valid until ctx ends: a new one at once when there is none (or it
// expired), at each rotation deadline, and by TLS bootstrap again when it expires. A failed
// request is retried with back-off while the old certificate stays in use; only a bootstrap
// request that is denied ends Run with an error.
func (m *Manager) Run(ctx context.Context) error {
	for {
		if !m.waitDue(ctx) {
			return nil
		}
		if err := m.renewUntilDone(ctx); err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// waitDue waits until the certificate needs replacing; false if ctx ended first.
func (m *Manager) waitDue(ctx context.Context) bool {
	cur := m.Current()
	if cur == nil || expired(cur) {
		return ctx.Err() == nil
	}
	m.readyOnce.Do(func() { close(m.ready) })
	var due <-chan time.Time // nil (never) without rotation or bootstrap
	switch {
	case m.rotate:
		deadline := m.deadline(cur.Leaf)
		klog.InfoS("Certificate rotation scheduled", "certificate", m.kind, "expires", cur.Leaf.NotAfter, "renewAt", deadline)
		due = time.After(time.Until(deadline))
	case m.boot != nil:
		klog.InfoS("Certificate rotation is off: TLS bootstrap again once the certificate expires", "certificate", m.kind, "expires", cur.Leaf.NotAfter)
		due = time.After(time.Until(cur.Leaf.NotAfter))
	}
	select {
	case <-ctx.Done():
		return false
	case <-due:
		return true
	}
}

// renewUntilDone requests a certificate until one is stored, retrying with back-off (retryStart
// doubling to retryMax); it returns an error only for a denied bootstrap request.
func (m *Manager) renewUntilDone(ctx context.Context) error {
	backoff := wait.Backoff{Duration: retryStart, Factor: 2, Cap: retryMax, Steps: math.MaxInt32}
	stored := func(ctx context.Context) (bool, error) {
		fatal, err := m.renew(ctx)
		switch {
		case err == nil || ctx.Err() != nil:
			return true, nil
		case fatal:
			return false, fmt.Errorf("TLS bootstrap: %w (approve a new request: restart nodelet, which makes one with a new key)", err)
		}
		metrics.CertRenewFailed(m.kind)
		klog.ErrorS(err, "Requesting a certificate failed; will retry", "certificate", m.kind)
		return false, nil
	}
	err := backoff.DelayFunc().Until(ctx, true, true, stored)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// renew makes one request: with the bootstrap credentials when there is no valid certificate
// and a bootstrap kubeconfig, with the certificate itself otherwise.
func (m *Manager) renew(ctx context.Context) (fatal bool, err error) {
	cur := m.Current()
	bootstrap := m.boot != nil && (cur == nil || expired(cur))
	var csrs kubeclient.CertificateSigningRequestInterface
	if bootstrap {
		why := "no client certificate yet"
		if cur != nil {
			why = "the client certificate expired " + cur.Leaf.NotAfter.String()
		}
		klog.InfoS("Requesting a client certificate with the bootstrap kubeconfig", "why", why, "bootstrapKubeconfig", m.boot.path)
		if csrs, err = m.boot.client(); err != nil {
			return false, err
		}
	} else if csrs, err = m.renewalClient(); err != nil {
		return false, err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	certPEM, keyPEM, err := request(rctx, csrs, m.store, m.req)
	if err != nil {
		return bootstrap && denied(err), err
	}
	cert, err := m.store.Update(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("storing the certificate in %s: %w", m.store.Dir, err)
	}
	m.store.dropPendingKey()
	m.use(cert)
	if bootstrap {
		klog.InfoS("TLS bootstrap done", "subject", cert.Leaf.Subject.String(), "expires", cert.Leaf.NotAfter, "path", m.store.CurrentPath())
		m.boot.pointKubeconfigAt(m.store.CurrentPath())
	} else {
		if cur != nil {
			metrics.CertRotated(m.kind, cur.Leaf.NotBefore)
		}
		klog.InfoS("Certificate rotated", "certificate", m.kind, "expires", cert.Leaf.NotAfter, "path", m.store.CurrentPath())
	}
	return false, nil
}

// use makes cert current and runs the rotation hooks.
func (m *Manager) use(cert *tls.Certificate) {
	m.mu.Lock()
	m.current = cert
	hooks := append([]func(){}, m.rotated...)
	m.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// UseRotatingCertificate makes cfg present m's current certificate on every new connection
// and drops the open connections after each renewal, so the API server sees the new identity
// without a restart. cfg's own client certificate settings are replaced.
func UseRotatingCertificate(cfg *rest.Config, m *Manager) error {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	if tlsConfig == nil {
		return errors.New("certificate rotation needs an https API server")
	}
	tlsConfig.Certificates = nil
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cur := m.Current(); cur != nil {
			return cur, nil
		}
		return &tls.Certificate{}, nil // none yet (TLS bootstrap under way): present none
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	m.OnRotate(dialer.CloseAll)
	cfg.Transport = &http.Transport{
		Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsConfig,
		MaxIdleConnsPerHost: 25, DialContext: dialer.DialContext, ForceAttemptHTTP2: true,
	}
	// rest refuses a custom transport next to TLS settings: the transport carries them now.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Dial = nil
	return nil
}
