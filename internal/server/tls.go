package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
)

// Names of the self-signed pair kept in the cert directory, as upstream.
const (
	selfSignedCertName = "kubelet.crt"
	selfSignedKeyName  = "kubelet.key"
)

// servingTLSConfig builds the TLS configuration of the secure port: the configured pair, the
// CSR-issued one (serverTLSBootstrap) or the self-signed one, TLS 1.2 unless told otherwise,
// and a request (not a demand) for a client certificate when a client CA is configured; the
// authenticator verifies it.
func servingTLSConfig(opts *Options, clientCAs *clientCA) (*tls.Config, *servingPair, error) {
	cfg, err := baseTLSConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	var files *servingPair
	if current := opts.ServingCertificate; current != nil {
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := current(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate issued yet: approve the node's kubernetes.io/kubelet-serving CertificateSigningRequest")
		}
	} else {
		certFile, keyFile, err := servedFiles(opts)
		if err != nil {
			return nil, nil, err
		}
		if files, err = newServingPair(certFile, keyFile); err != nil {
			return nil, nil, err
		}
		if opts.ReloadCertificateFiles {
			cfg.GetCertificate = files.get
		} else {
			cfg.Certificates = []tls.Certificate{*files.pair}
			files = nil
		}
	}
	if clientCAs != nil {
		clientCAs.advertise(cfg) // last: each handshake clones cfg as it is now
	}
	return cfg, files, nil
}

// baseTLSConfig holds the protocol settings: TLS 1.2 unless told otherwise, the cipher suites.
func baseTLSConfig(opts *Options) (*tls.Config, error) {
	minVersion, err := tlsVersion(opts.TLSMinVersion)
	if err != nil {
		return nil, err
	}
	suites, err := cipherSuites(opts.TLSCipherSuites)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: minVersion, CipherSuites: suites}, nil
}

// servedFiles are the configured pair's files or the self-signed one's.
func servedFiles(opts *Options) (string, string, error) {
	if opts.TLSCertFile == "" && opts.TLSKeyFile == "" {
		return ensureSelfSignedCert(opts)
	}
	return opts.TLSCertFile, opts.TLSKeyFile, nil
}

// ensureSelfSignedCert returns the self-signed pair in the cert directory, creating it the
// first time (and again only if it can no longer be used), so restarts keep the same identity.
func ensureSelfSignedCert(opts *Options) (string, string, error) {
	if opts.CertDir == "" {
		return "", "", fmt.Errorf("no serving certificate: set tlsCertFile/tlsPrivateKeyFile or --cert-dir")
	}
	certFile := filepath.Join(opts.CertDir, selfSignedCertName)
	keyFile := filepath.Join(opts.CertDir, selfSignedKeyName)
	if usable, why := usableCertPair(certFile, keyFile); usable {
		return certFile, keyFile, nil
	} else if why != nil {
		klog.InfoS("Replacing the self-signed serving certificate", "cert", certFile, "reason", why.Error())
	}
	host := opts.NodeName
	if host == "" {
		host = "localhost"
	}
	ips := append([]net.IP{net.ParseIP("127.0.0.1")}, opts.HostIPs...)
	dns := append([]string{opts.NodeName, "localhost"}, opts.Hostnames...)
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, dedupIPs(ips), dedupNames(dns, host))
	if err != nil {
		return "", "", fmt.Errorf("generating the self-signed serving certificate: %w", err)
	}
	if err := os.MkdirAll(opts.CertDir, 0o755); err != nil {
		return "", "", fmt.Errorf("creating --cert-dir %s: %w", opts.CertDir, err)
	}
	if err := keyutil.WriteKey(keyFile, keyPEM); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", keyFile, err)
	}
	if err := certutil.WriteCert(certFile, certPEM); err != nil {
		return "", "", fmt.Errorf("writing %s: %w", certFile, err)
	}
	klog.InfoS("Generated a self-signed serving certificate", "cert", certFile, "key", keyFile)
	return certFile, keyFile, nil
}

// usableCertPair reports whether an existing pair loads and has not expired; why is nil when
// the files simply do not exist yet.
func usableCertPair(certFile, keyFile string) (bool, error) {
	if _, err := os.Stat(certFile); os.IsNotExist(err) {
		return false, nil
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return false, err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return false, err
	}
	if time.Now().After(leaf.NotAfter) {
		return false, fmt.Errorf("expired at %s", leaf.NotAfter.Format(time.RFC3339))
	}
	return true, nil
}

func dedupIPs(ips []net.IP) []net.IP {
	var out []net.IP
	seen := map[string]bool{}
	for _, ip := range ips {
		if ip == nil || seen[ip.String()] {
			continue
		}
		seen[ip.String()] = true
		out = append(out, ip)
	}
	return out
}

// dedupNames drops empty names, repeats and the host itself (the generator adds the host).
func dedupNames(names []string, host string) []string {
	var out []string
	seen := map[string]bool{host: true}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

var tlsVersions = map[string]uint16{
	"VersionTLS10": tls.VersionTLS10,
	"VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12,
	"VersionTLS13": tls.VersionTLS13,
}

// tlsVersion maps a tlsMinVersion name; empty means TLS 1.2.
func tlsVersion(name string) (uint16, error) {
	if name == "" {
		return tls.VersionTLS12, nil
	}
	v, ok := tlsVersions[name]
	if !ok {
		return 0, fmt.Errorf("unknown tlsMinVersion %q", name)
	}
	return v, nil
}

// cipherSuites maps tlsCipherSuites names (Go's names) to IDs; empty means Go's defaults.
func cipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	// upstream's names: Go's, plus the legacy CHACHA20 names without _SHA256 that configurations
	// written for the kubelet still use.
	return cliflag.TLSCipherSuites(names)
}
