package certificates

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
	"github.com/nodelet/nodelet/internal/lib/kubeclient"
)

// NewClient builds the API client a certificate request is made with (bootstrap and renewal);
// tests substitute it.
type NewClient func(cfg *rest.Config) (kubeclient.Interface, error)

// ClientOptions say where the node's API identity comes from.
type ClientOptions struct {
	NodeName            string
	Kubeconfig          string // --kubeconfig; written after TLS bootstrap
	BootstrapKubeconfig string // --bootstrap-kubeconfig; empty: no TLS bootstrap
	Store               Store  // the client pairs in --cert-dir
	Rotate              bool   // rotateCertificates
	NewClient           NewClient
}

// NewClientIdentity returns the API client config and the manager of its client certificate
// (nil when the kubeconfig's credentials are used as they are: neither TLS bootstrap nor
// rotation). With a bootstrap kubeconfig nothing waits here: when the node has no valid
// certificate the manager's Run requests one in the background (as upstream does with
// rotation on), so static pods start meanwhile; Ready says when the API can be used.
func NewClientIdentity(o ClientOptions) (*rest.Config, *Manager, error) {
	if o.BootstrapKubeconfig == "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		if err != nil {
			return nil, nil, fmt.Errorf("reading --kubeconfig %s: %w", o.Kubeconfig, err)
		}
		if !o.Rotate {
			return cfg, nil, nil
		}
		m, err := NewClientManager(o.Store, o.NodeName, cfg, o.NewClient)
		if err != nil {
			return nil, nil, err
		}
		return cfg, m, UseRotatingCertificate(cfg, m)
	}
	bootCfg, err := clientcmd.BuildConfigFromFlags("", o.BootstrapKubeconfig)
	if err != nil {
		if valid, _ := clientConfigValid(o.Kubeconfig); valid {
			// kubeadm removes the bootstrap kubeconfig once the node has joined.
			klog.InfoS("Bootstrap kubeconfig unreadable; using --kubeconfig without TLS bootstrap", "bootstrapKubeconfig", o.BootstrapKubeconfig, "err", err)
			o.BootstrapKubeconfig = ""
			return NewClientIdentity(o)
		}
		return nil, nil, fmt.Errorf("reading --bootstrap-kubeconfig %s: %w", o.BootstrapKubeconfig, err)
	}
	boot := &bootstrapper{path: o.BootstrapKubeconfig, kubeconfig: o.Kubeconfig, config: bootCfg, newClient: o.NewClient}
	cfg := rest.AnonymousClientConfig(bootCfg) // the bootstrap kubeconfig's server and CA
	var candidates []*tls.Certificate
	if cur, err := o.Store.Current(); err == nil {
		candidates = append(candidates, cur)
	}
	valid, why := clientConfigValid(o.Kubeconfig)
	if valid {
		if cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig); err != nil {
			return nil, nil, fmt.Errorf("reading --kubeconfig %s: %w", o.Kubeconfig, err)
		}
		if pair, err := kubeconfigPair(cfg); err == nil {
			candidates = append(candidates, pair)
		}
	}
	m := newManager(o.Store, clientRequest(o.NodeName), "client", firstValid(candidates))
	m.rotate, m.boot = o.Rotate, boot
	m.renewalClient = clientOn(cfg, o.NewClient)
	switch {
	case m.current == nil:
		klog.InfoS("No valid client certificate: TLS bootstrap runs in the background; static pods start meanwhile", "why", why, "kubeconfig", o.Kubeconfig)
	case !valid:
		boot.pointKubeconfigAt(o.Store.CurrentPath()) // the store's pair is valid
	}
	return cfg, m, UseRotatingCertificate(cfg, m)
}

func firstValid(certs []*tls.Certificate) *tls.Certificate {
	for _, c := range certs {
		if c.Leaf != nil && !expired(c) {
			return c
		}
	}
	return nil
}

// bootstrapper requests client certificates with the bootstrap kubeconfig's credentials (a
// bootstrap token, usually) and writes --kubeconfig pointing at the result.
type bootstrapper struct {
	path       string // --bootstrap-kubeconfig, for logs
	kubeconfig string // --kubeconfig
	config     *rest.Config
	newClient  NewClient

	mu   sync.Mutex
	csrs kubeclient.CertificateSigningRequestInterface
}

func (b *bootstrapper) client() (kubeclient.CertificateSigningRequestInterface, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.csrs == nil {
		c, err := b.newClient(rest.CopyConfig(b.config))
		if err != nil {
			return nil, fmt.Errorf("API client with --bootstrap-kubeconfig %s: %w", b.path, err)
		}
		b.csrs = c.CertificatesV1().CertificateSigningRequests()
	}
	return b.csrs, nil
}

// pointKubeconfigAt writes --kubeconfig for the pair at pairPath. Only a later start reads it
// (this one uses the pair directly), so a failure is logged, not returned.
func (b *bootstrapper) pointKubeconfigAt(pairPath string) {
	if err := writeKubeconfig(b.kubeconfig, b.config, pairPath); err != nil {
		klog.ErrorS(err, "Writing the kubeconfig failed; the next start bootstraps again", "kubeconfig", b.kubeconfig)
	}
}

// clientConfigValid: the kubeconfig exists and carries a client certificate that has not
// expired (as upstream decides whether to bootstrap again).
func clientConfigValid(path string) (bool, string) {
	if _, err := os.Stat(path); err != nil {
		return false, "no kubeconfig yet"
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return false, "kubeconfig unreadable: " + err.Error()
	}
	certs, err := clientCertificates(cfg)
	if err != nil {
		return false, err.Error()
	}
	if len(certs) == 0 {
		return false, "kubeconfig has no client certificate"
	}
	for _, c := range certs {
		if time.Now().After(c.NotAfter) {
			return false, "client certificate expired " + c.NotAfter.String()
		}
	}
	return true, ""
}

func clientCertificates(cfg *rest.Config) ([]*x509.Certificate, error) {
	data := cfg.CertData
	if len(data) == 0 && cfg.CertFile != "" {
		var err error
		if data, err = os.ReadFile(cfg.CertFile); err != nil {
			return nil, fmt.Errorf("client certificate unreadable: %w", err)
		}
	}
	if len(data) == 0 {
		return nil, nil
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return nil, fmt.Errorf("client certificate unreadable: %w", err)
	}
	return certs, nil
}

// writeKubeconfig writes, atomically, a kubeconfig with the bootstrap config's server and CA
// and the client certificate and key at pairPath (one file holds both).
func writeKubeconfig(path string, bootstrap *rest.Config, pairPath string) error {
	ca := bootstrap.CAData
	if len(ca) == 0 && bootstrap.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(bootstrap.CAFile); err != nil {
			return fmt.Errorf("reading the bootstrap kubeconfig's CA: %w", err)
		}
	}
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server: bootstrap.Host, CertificateAuthorityData: ca, TLSServerName: bootstrap.ServerName,
			InsecureSkipTLSVerify: bootstrap.Insecure,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pairPath, ClientKey: pairPath}},
		Contexts: map[string]*clientcmdapi.Context{"default-context": {
			Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default",
		}},
		CurrentContext: "default-context",
	}
	data, err := clientcmd.Write(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing --kubeconfig %s: %w", path, err)
	}
	return nil
}
