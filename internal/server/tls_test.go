package server

import (
	"crypto/tls"
	"strings"
	"testing"
)

// With serverTLSBootstrap the served pair is whatever the certificate manager holds at the
// handshake; before the first is issued the handshake fails saying what to approve.
func TestServingCertificateFollowsTheManager(t *testing.T) {
	var current *tls.Certificate
	cfg, err := servingTLSConfig(&Options{ServingCertificate: func() *tls.Certificate { return current }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Certificates) != 0 {
		t.Fatal("a static pair next to the manager's")
	}
	if _, err := cfg.GetCertificate(&tls.ClientHelloInfo{}); err == nil || !strings.Contains(err.Error(), "kubelet-serving") {
		t.Errorf("before issue: %v, want a hint at the CSR", err)
	}
	current = &tls.Certificate{Certificate: [][]byte{{1}}}
	if got, err := cfg.GetCertificate(&tls.ClientHelloInfo{}); err != nil || got != current {
		t.Errorf("after issue: %v, %v", got, err)
	}
}
