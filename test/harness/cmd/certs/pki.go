package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Lifetimes are long on purpose: this PKI serves a development cluster that lives for weeks.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 5 * 365 * 24 * time.Hour
)

// authority is a loaded or freshly made certificate authority.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// leafSpec describes one certificate the authority issues.
type leafSpec struct {
	name     string // file stem: <name>.crt / <name>.key
	subject  pkix.Name
	usages   []x509.ExtKeyUsage
	dnsNames []string
	ips      []net.IP
}

// loadOrCreateCA reads <stem>.crt/<stem>.key from dir, creating them when either is missing.
func loadOrCreateCA(dir, stem, commonName string) (*authority, error) {
	crtPath, keyPath := filepath.Join(dir, stem+".crt"), filepath.Join(dir, stem+".key")
	if exists(crtPath) && exists(keyPath) {
		return loadCA(crtPath, keyPath)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	if err := writeKeyPair(dir, stem, der, key); err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return &authority{cert: cert, key: key}, err
}

func loadCA(crtPath, keyPath string) (*authority, error) {
	cert, err := readCert(crtPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", keyPath)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: key cannot sign", keyPath)
	}
	return &authority{cert: cert, key: signer}, nil
}

// ensureLeaf issues spec's certificate unless a valid one signed by ca with the same
// names already exists (so a changed host IP gets a fresh serving cert).
func (ca *authority) ensureLeaf(dir string, spec leafSpec) error {
	if current, err := readCert(filepath.Join(dir, spec.name+".crt")); err == nil &&
		exists(filepath.Join(dir, spec.name+".key")) && ca.stillMatches(current, spec) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      spec.subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  spec.usages,
		DNSNames:     spec.dnsNames,
		IPAddresses:  spec.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return fmt.Errorf("issue %s: %w", spec.name, err)
	}
	return writeKeyPair(dir, spec.name, der, key)
}

func (ca *authority) stillMatches(cert *x509.Certificate, spec leafSpec) bool {
	if cert.CheckSignatureFrom(ca.cert) != nil || time.Now().After(cert.NotAfter.Add(-30*24*time.Hour)) {
		return false
	}
	if cert.Subject.CommonName != spec.subject.CommonName ||
		!slices.Equal(cert.Subject.Organization, spec.subject.Organization) {
		return false
	}
	for _, ip := range spec.ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	for _, name := range spec.dnsNames {
		if !slices.Contains(cert.DNSNames, name) {
			return false
		}
	}
	return true
}

// ensureServiceAccountKey writes sa.key (RSA, PKCS#8) and sa.pub once; tokens signed with
// it must stay valid across restarts, so it is never regenerated.
func ensureServiceAccountKey(dir string) error {
	keyPath, pubPath := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if exists(keyPath) && exists(pubPath) {
		return nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := writePEM(keyPath, "PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(pubPath, "PUBLIC KEY", pubDER, 0o644)
}

func writeKeyPair(dir, name string, certDER []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, name+".key"), "PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", certDER, 0o644)
}

func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

func newSerial() *big.Int {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return serial
}
