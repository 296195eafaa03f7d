package certificates

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/kubeclient"
)

// Manager holds one of the node's certificates (client or serving) and renews it at 70–90 %
// of its lifetime (a random point, as upstream, so a fleet bootstrapped together does not
// renew together).
type Manager struct {
	store    Store
	signer   string
	usages   []certificatesv1.KeyUsage
	template *x509.CertificateRequest
	kind     string // "client" or "serving", for logs

	mu       sync.RWMutex
	current  *tls.Certificate
	csrs     kubeclient.CertificateSigningRequestInterface
	rotated  []func()
	deadline func(*x509.Certificate) time.Time
}

// NewClientManager starts from the store's current pair or, when the store has none yet,
// from the kubeconfig's client certificate and key (files or inline data).
func NewClientManager(store Store, nodeName string, kubeconfig *rest.Config) (*Manager, error) {
	cert, err := store.Current()
	if errors.Is(err, os.ErrNotExist) {
		cert, err = kubeconfigPair(kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("client certificate for rotation: %w (with rotateCertificates the kubeconfig needs a client certificate, or use --bootstrap-kubeconfig)", err)
	}
	return &Manager{store: store, signer: ClientSigner, usages: clientUsages, template: nodeSubject(nodeName), kind: "client",
		current: cert, deadline: rotationDeadline}, nil
}

// NewServingManager manages the serving certificate of the kubelet API (serverTLSBootstrap):
// signer kubernetes.io/kubelet-serving, the node's addresses and host names as SANs. Until
// the first one is issued Current is nil.
func NewServingManager(store Store, nodeName string, ips []net.IP, dnsNames []string) (*Manager, error) {
	cert, err := store.Current()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	tmpl := nodeSubject(nodeName)
	tmpl.IPAddresses, tmpl.DNSNames = ips, dnsNames
	return &Manager{store: store, signer: ServingSigner, usages: servingUsages, template: tmpl, kind: "serving",
		current: cert, deadline: rotationDeadline}, nil
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

// SetClient gives the client renewals are requested with (it authenticates with Current).
func (m *Manager) SetClient(csrs kubeclient.CertificateSigningRequestInterface) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.csrs = csrs
}

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

// Run renews the certificate at each deadline (at once when there is none) until ctx ends;
// a failed renewal is retried with back-off while the old certificate stays in use.
func (m *Manager) Run(ctx context.Context) error {
	for {
		if cur := m.Current(); cur != nil {
			deadline := m.deadline(cur.Leaf)
			klog.InfoS("Certificate rotation scheduled", "certificate", m.kind, "expires", cur.Leaf.NotAfter, "renewAt", deadline)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Until(deadline)):
			}
		}
		backoff := wait.Backoff{Duration: 2 * time.Second, Factor: 2, Jitter: 0.1, Steps: 20, Cap: 5 * time.Minute}
		err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			if err := m.rotate(ctx); err != nil {
				klog.ErrorS(err, "Requesting a certificate failed; will retry", "certificate", m.kind)
				return false, nil
			}
			return true, nil
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && m.Current() != nil {
			klog.ErrorS(err, "Renewing the certificate keeps failing; trying again at the next deadline", "certificate", m.kind)
		}
	}
}

func (m *Manager) rotate(ctx context.Context) error {
	m.mu.RLock()
	csrs := m.csrs
	m.mu.RUnlock()
	if csrs == nil {
		return errors.New("no API client to request the certificate with")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	certPEM, keyPEM, err := request(ctx, csrs, m.signer, m.usages, m.template)
	if err != nil {
		return err
	}
	cert, err := m.store.Update(certPEM, keyPEM)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.current = cert
	hooks := append([]func(){}, m.rotated...)
	m.mu.Unlock()
	klog.InfoS("Certificate rotated", "certificate", m.kind, "expires", cert.Leaf.NotAfter, "path", m.store.CurrentPath())
	for _, f := range hooks {
		f()
	}
	return nil
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
		return m.Current(), nil
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
