// Package certificates gets and renews the node's client certificate through the API server:
// TLS bootstrap with a bootstrap kubeconfig (a CertificateSigningRequest for
// kubernetes.io/kube-apiserver-client-kubelet) and rotation before expiry, with the files laid
// out as the upstream kubelet lays them out in --cert-dir.
package certificates

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/lib/atomicfile"
)

// Store keeps certificate and key pairs as one PEM file each, <prefix>-<timestamp>.pem, with
// <prefix>-current.pem a symlink to the one in use (upstream's layout, so tools and a later
// upstream kubelet find them). The key of a request still pending waits in <prefix>.key.tmp.
type Store struct {
	Dir    string
	Prefix string // e.g. "kubelet-client"
}

// CurrentPath is the symlink to the pair in use; kubeconfigs point at it.
func (s Store) CurrentPath() string { return filepath.Join(s.Dir, s.Prefix+"-current.pem") }

// PendingKeyPath holds the private key of the certificate request under way, so a restart
// asks for (and finds) the same request rather than abandoning it.
func (s Store) PendingKeyPath() string { return filepath.Join(s.Dir, s.Prefix+".key.tmp") }

// Current loads the pair in use; an error wrapping os.ErrNotExist means there is none yet.
func (s Store) Current() (*tls.Certificate, error) {
	return loadPair(s.CurrentPath())
}

func loadPair(path string) (*tls.Certificate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parsePair(path, raw, raw)
}

func parsePair(path string, certPEM, keyPEM []byte) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
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

// Update writes a new pair and points the current link at it, atomically and durably: a
// reader, or the next start after a crash, sees the old pair or the new one, never a mix.
func (s Store) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	name := s.Prefix + "-" + time.Now().Format("2006-01-02-15-04-05") + ".pem"
	path := filepath.Join(s.Dir, name)
	cert, err := parsePair(path, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(path, append(append([]byte{}, certPEM...), keyPEM...), 0o600); err != nil {
		return nil, err
	}
	if err := replaceSymlink(name, s.CurrentPath()); err != nil {
		return nil, err
	}
	return cert, nil
}

// replaceSymlink points link at target through a new link renamed over it, then fsyncs the
// directory so the switch survives a crash.
func replaceSymlink(target, link string) error {
	tmp := fmt.Sprintf("%s.updating-%d", link, time.Now().UnixNano())
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	dir, err := os.Open(filepath.Dir(link))
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Dir(link), err)
	}
	return nil
}

// pendingKey is the key of the request under way: the one kept on disk, or a new one written
// there first. A kept key that is the current pair's own (a crash after storing the pair but
// before dropping the key) is stale: its request was already served.
func (s Store) pendingKey() (*ecdsa.PrivateKey, []byte, error) {
	raw, err := os.ReadFile(s.PendingKeyPath())
	if err == nil {
		key, perr := parseECKey(raw)
		switch {
		case perr != nil:
			klog.InfoS("Ignoring an unreadable pending certificate key; making a new one", "path", s.PendingKeyPath(), "err", perr)
		case s.isCurrentKey(key):
			klog.V(2).InfoS("The pending certificate key is the current pair's; making a new one", "path", s.PendingKeyPath())
		default:
			klog.InfoS("Reusing the private key of an earlier certificate request", "path", s.PendingKeyPath())
			return key, raw, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading the pending certificate key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("certificate directory: %w", err)
	}
	if err := atomicfile.WriteFile(s.PendingKeyPath(), keyPEM, 0o600); err != nil {
		return nil, nil, fmt.Errorf("keeping the certificate request's key: %w (check --cert-dir)", err)
	}
	return key, keyPEM, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// dropPendingKey forgets the pending key once its request is served or refused.
func (s Store) dropPendingKey() {
	if err := os.Remove(s.PendingKeyPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		klog.ErrorS(err, "Removing the pending certificate key failed", "path", s.PendingKeyPath())
	}
}

func (s Store) isCurrentKey(key *ecdsa.PrivateKey) bool {
	cur, err := s.Current()
	return err == nil && samePublicKey(cur.Leaf.PublicKey, &key.PublicKey)
}

func parseECKey(raw []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if key, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return key, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an ECDSA key")
	}
	return key, nil
}

// samePublicKey: a and b are the same public key (every key type of crypto/x509 has Equal).
func samePublicKey(a, b crypto.PublicKey) bool {
	ka, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ka.Equal(b)
}
