package certificates

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/kubeclient"
)

// NewClient builds the API client a certificate request is made with; tests substitute it.
type NewClient func(cfg *rest.Config) (kubeclient.Interface, error)

// Bootstrap makes sure kubeconfigPath holds a usable client identity. When it is missing, or
// its client certificate is unreadable or expired, it requests a certificate for
// system:node:<nodeName> with the bootstrap kubeconfig's credentials (a bootstrap token,
// usually), stores it in store and writes kubeconfigPath pointing at it, with the bootstrap
// kubeconfig's server and CA. It waits, logging progress, until the certificate is issued or
// ctx ends.
func Bootstrap(ctx context.Context, kubeconfigPath, bootstrapPath string, store Store, nodeName string, newClient NewClient) error {
	ok, why := clientConfigValid(kubeconfigPath)
	if ok {
		return nil
	}
	klog.InfoS("Requesting a client certificate with the bootstrap kubeconfig", "kubeconfig", kubeconfigPath, "why", why, "bootstrapKubeconfig", bootstrapPath)
	bootstrapCfg, err := clientcmd.BuildConfigFromFlags("", bootstrapPath)
	if err != nil {
		return fmt.Errorf("reading --bootstrap-kubeconfig %s: %w", bootstrapPath, err)
	}
	client, err := newClient(bootstrapCfg)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := request(ctx, client.CertificatesV1().CertificateSigningRequests(), ClientSigner, clientUsages,
		nodeSubject(nodeName))
	if err != nil {
		return fmt.Errorf("TLS bootstrap: %w", err)
	}
	cert, err := store.Update(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("storing the client certificate in %s: %w", store.Dir, err)
	}
	if err := writeKubeconfig(kubeconfigPath, bootstrapCfg, store.CurrentPath()); err != nil {
		return err
	}
	klog.InfoS("TLS bootstrap done", "subject", cert.Leaf.Subject.String(), "expires", cert.Leaf.NotAfter, "kubeconfig", kubeconfigPath)
	return nil
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

// writeKubeconfig writes a kubeconfig with the bootstrap config's server and CA and the client
// certificate and key at pairPath (one file holds both).
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
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		return fmt.Errorf("writing --kubeconfig %s: %w", path, err)
	}
	return nil
}
