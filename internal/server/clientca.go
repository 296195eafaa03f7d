package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
)

// clientCAReloadPeriod is how often the client CA file is read again for changes.
var clientCAReloadPeriod = 10 * time.Second

// clientCA is the client CA bundle (authentication.x509.clientCAFile), read again when the
// file changes so a rotated cluster CA is trusted without a restart. A change that does not
// parse keeps the previous bundle.
type clientCA struct {
	path string
	raw  []byte // the bundle in use, as read
	pool atomic.Pointer[x509.CertPool]
}

func newClientCA(path string) (*clientCA, error) {
	ca := &clientCA{path: path}
	if _, err := ca.reload(); err != nil {
		return nil, err
	}
	return ca, nil
}

func (ca *clientCA) current() *x509.CertPool { return ca.pool.Load() }

// reload reads the file and swaps the bundle when its content changed.
func (ca *clientCA) reload() (bool, error) {
	raw, err := os.ReadFile(ca.path)
	if err != nil {
		return false, fmt.Errorf("reading clientCAFile: %w", err)
	}
	if ca.raw != nil && bytes.Equal(raw, ca.raw) {
		return false, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return false, fmt.Errorf("clientCAFile %s holds no PEM certificates", ca.path)
	}
	ca.raw = raw
	ca.pool.Store(pool)
	return true, nil
}

// run reloads the bundle every clientCAReloadPeriod until ctx ends.
func (ca *clientCA) run(ctx context.Context) {
	ticker := time.NewTicker(clientCAReloadPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		changed, err := ca.reload()
		if err != nil {
			klog.ErrorS(err, "Keeping the previous client CA bundle", "file", ca.path)
		} else if changed {
			klog.InfoS("Client CA file changed; trusting the new bundle", "file", ca.path)
		}
	}
}

// advertise makes each handshake name the current bundle's CAs, so clients pick a
// certificate the server will accept.
func (ca *clientCA) advertise(base *tls.Config) {
	base.ClientAuth = tls.RequestClientCert
	if len(base.NextProtos) == 0 {
		base.NextProtos = []string{"h2", "http/1.1"} // what http.Server would have offered
	}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := base.Clone()
		cfg.GetConfigForClient = nil
		cfg.ClientCAs = ca.current()
		return cfg, nil
	}
}
