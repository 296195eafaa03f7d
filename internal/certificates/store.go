// Package certificates gets and renews the node's client certificate through the API server:
// TLS bootstrap with a bootstrap kubeconfig (a CertificateSigningRequest for
// kubernetes.io/kube-apiserver-client-kubelet) and rotation before expiry, with the files laid
// out as the upstream kubelet lays them out in --cert-dir.
package certificates

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Store keeps certificate and key pairs as one PEM file each, <prefix>-<timestamp>.pem, with
// <prefix>-current.pem a symlink to the one in use (upstream's layout, so tools and a later
// upstream kubelet find them).
type Store struct {
	Dir    string
	Prefix string // e.g. "kubelet-client"
}

// CurrentPath is the symlink to the pair in use; kubeconfigs point at it.
func (s Store) CurrentPath() string { return filepath.Join(s.Dir, s.Prefix+"-current.pem") }

// Current loads the pair in use; an error wrapping os.ErrNotExist means there is none yet.
func (s Store) Current() (*tls.Certificate, error) {
	return loadPair(s.CurrentPath())
}

func loadPair(path string) (*tls.Certificate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(raw, raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return &cert, nil
}

// Update writes a new pair and points the current link at it, atomically: a reader sees the
// old pair or the new one, never a mix.
func (s Store) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	name := s.Prefix + "-" + time.Now().Format("2006-01-02-15-04-05") + ".pem"
	path := filepath.Join(s.Dir, name)
	if err := os.WriteFile(path, append(append([]byte{}, certPEM...), keyPEM...), 0o600); err != nil {
		return nil, err
	}
	cert, err := loadPair(path)
	if err != nil {
		return nil, err
	}
	tmp := s.CurrentPath() + ".updating"
	_ = os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, s.CurrentPath()); err != nil {
		return nil, err
	}
	return cert, nil
}
