package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// The serving pair is signed by a CA written next to it, which clients can trust; a second
// run keeps it.
func TestTLSPairVerifiesAgainstItsCA(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, err := ensureTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA")
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("serving certificate does not verify for 127.0.0.1 against ca.crt: %v", err)
	}
	before, _ := os.ReadFile(certFile)
	if _, _, err := ensureTLS(dir); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(certFile); string(after) != string(before) {
		t.Error("a second run made a new pair")
	}
}

func TestHtpasswdHoldsABcryptOfThePassword(t *testing.T) {
	out := filepath.Join(t.TempDir(), "htpasswd")
	if err := writeHtpasswd(out, "e2e:s3cret"); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(out)
	user, hash, ok := strings.Cut(strings.TrimSpace(string(raw)), ":")
	if !ok || user != "e2e" {
		t.Fatalf("htpasswd = %q", raw)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret")) != nil || bcrypt.CompareHashAndPassword([]byte(hash), []byte("wrong")) == nil {
		t.Fatalf("the hash does not hold the password alone: %q", hash)
	}
	if err := writeHtpasswd(out, "no-password"); err == nil {
		t.Fatal("a -user without a password was accepted")
	}
}
