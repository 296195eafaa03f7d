package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/kubeclient"
)

// Signers and usages of the node's certificates, as upstream requests them.
const (
	ClientSigner  = certificatesv1.KubeAPIServerClientKubeletSignerName
	ServingSigner = certificatesv1.KubeletServingSignerName
)

var (
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
)

// pollInterval is how often a pending request is read again; progressEvery how often the wait
// is logged.
var (
	pollInterval  = time.Second
	progressEvery = 30 * time.Second
)

// request creates a CertificateSigningRequest for tmpl with a new ECDSA P-256 key and waits
// until the signer issues the certificate (or the request is denied or fails, or ctx ends).
func request(ctx context.Context, csrs kubeclient.CertificateSigningRequestInterface, signer string,
	usages []certificatesv1.KeyUsage, tmpl *x509.CertificateRequest) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate request: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     usages,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the certificate signing request: %w", err)
	}
	klog.InfoS("Waiting for the certificate signing request to be approved and issued", "csr", csr.Name, "signer", signer)
	certPEM, err = waitIssued(ctx, csrs, csr.Name)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// waitIssued polls the request until it carries a certificate.
func waitIssued(ctx context.Context, csrs kubeclient.CertificateSigningRequestInterface, name string) ([]byte, error) {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	started, lastLog := time.Now(), time.Now()
	for {
		csr, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if cert, done, err := issued(csr); done {
				return cert, err
			}
		} else {
			klog.V(2).InfoS("Reading the certificate signing request failed; will retry", "csr", name, "err", err)
		}
		if time.Since(lastLog) >= progressEvery {
			lastLog = time.Now()
			klog.InfoS("Still waiting for the certificate signing request", "csr", name, "waited", time.Since(started).Round(time.Second),
				"hint", "an approver must approve it (kube-controller-manager's csrapproving controller with the node bootstrap RBAC bindings, or kubectl certificate approve "+name+")")
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for certificate signing request %s: %w", name, ctx.Err())
		case <-ticker.C:
		}
	}
}

// issued: done is true once the request is denied, failed or carries its certificate.
func issued(csr *certificatesv1.CertificateSigningRequest) (cert []byte, done bool, err error) {
	for _, c := range csr.Status.Conditions {
		if c.Status != v1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return nil, true, fmt.Errorf("certificate signing request %s was denied: %s %s", csr.Name, c.Reason, c.Message)
		case certificatesv1.CertificateFailed:
			return nil, true, fmt.Errorf("certificate signing request %s failed: %s %s", csr.Name, c.Reason, c.Message)
		}
	}
	if len(csr.Status.Certificate) == 0 {
		return nil, false, nil
	}
	return csr.Status.Certificate, true, nil
}
