package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// servingPairResync is how often the pair's files are read again even without a file event,
// as upstream's dynamic serving certificate does (a missed event, a file system without
// inotify).
var servingPairResync = time.Minute

// servingPair is the serving certificate and key read from files (tlsCertFile and
// tlsPrivateKeyFile, or the self-signed pair), read again when the files change so a
// rotated certificate is served without a restart, as upstream with its
// ReloadKubeletServerCertificateFile gate. A change that does not load (a key not yet
// written, a pair that does not match) keeps the previous pair.
type servingPair struct {
	certFile, keyFile string

	mu      sync.Mutex
	certPEM []byte
	keyPEM  []byte
	pair    *tls.Certificate
}

func newServingPair(certFile, keyFile string) (*servingPair, error) {
	p := &servingPair{certFile: certFile, keyFile: keyFile}
	if _, err := p.reload(); err != nil {
		return nil, err
	}
	return p, nil
}

// get is the tls.Config GetCertificate of the served pair.
func (p *servingPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pair, nil
}

// reload reads both files and swaps the pair when their content changed.
func (p *servingPair) reload() (bool, error) {
	certPEM, err := os.ReadFile(p.certFile)
	if err != nil {
		return false, fmt.Errorf("loading serving certificate %s: %w", p.certFile, err)
	}
	keyPEM, err := os.ReadFile(p.keyFile)
	if err != nil {
		return false, fmt.Errorf("loading serving key %s: %w", p.keyFile, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pair != nil && bytes.Equal(certPEM, p.certPEM) && bytes.Equal(keyPEM, p.keyPEM) {
		return false, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("loading serving certificate %s / key %s: %w", p.certFile, p.keyFile, err)
	}
	p.certPEM, p.keyPEM, p.pair = certPEM, keyPEM, &pair
	return true, nil
}

// run reloads the pair on every change in the files' directories (a rename into place, a
// symlink swap as of a mounted Secret, a write) and every servingPairResync, until ctx ends.
func (p *servingPair) run(ctx context.Context) {
	events, errs := make(chan fsnotify.Event), make(chan error)
	if w, err := fsnotify.NewWatcher(); err != nil {
		klog.ErrorS(err, "Not watching the serving certificate files; reading them every minute", "cert", p.certFile)
	} else {
		defer w.Close()
		for _, dir := range uniqueDirs(p.certFile, p.keyFile) {
			if err := w.Add(dir); err != nil {
				klog.ErrorS(err, "Not watching a serving certificate directory; reading it every minute", "dir", dir)
			}
		}
		events, errs = w.Events, w.Errors
	}
	ticker := time.NewTicker(servingPairResync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
		case err := <-errs:
			klog.V(2).InfoS("Watching the serving certificate files", "err", err)
			continue
		case <-ticker.C:
		}
		changed, err := p.reload()
		if err != nil {
			klog.ErrorS(err, "Keeping the previous serving certificate")
		} else if changed {
			klog.InfoS("Serving certificate files changed; serving the new pair", "cert", p.certFile, "key", p.keyFile)
		}
	}
}

func uniqueDirs(files ...string) []string {
	var dirs []string
	for _, f := range files {
		d := filepath.Dir(f)
		if len(dirs) == 0 || dirs[0] != d {
			dirs = append(dirs, d)
		}
	}
	return dirs
}
